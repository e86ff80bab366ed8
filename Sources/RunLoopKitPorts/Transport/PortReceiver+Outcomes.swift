/// What a receiver's hand-off and its receives answer.
extension PortReceiver {
    /// What `hand` did. `queued(first:)`: first, the queue was empty, so
    /// the port's loop must be told; otherwise an earlier hand told it, and
    /// its delivery reads the queue until it finds it empty.
    enum Handing { case queued(first: Bool), full, closed }

    /// What one look at the queue found.
    enum Received {
        /// A good message, decoded into the inbox, with its trace id if the
        /// sender's tap was on.
        case message(traceID: UInt64?)
        /// A malformed message, dropped, counted and logged (S-PORT-7); it
        /// still counts as a handled Source1 event (S-SRC1-1).
        case dropped
        /// Nothing is queued.
        case empty
        /// A message is queued, but the batch may not take it without a
        /// look at its loop (`CalloutBatch.admits()`), or may not take it
        /// at all: it stays here, first in line for the next receive.
        case notAdmitted
    }
}
