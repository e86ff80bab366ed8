internal import CZeroMQ

/// Readiness of a socket as reported by `ZMQ_EVENTS` (``Socket/events``).
///
/// Thread rules: a plain value; `Sendable`.
public struct SocketEvents: OptionSet, Sendable {
    /// The `ZMQ_POLL*` bits.
    public let rawValue: Int32

    /// Wraps `ZMQ_POLL*` bits.
    public init(rawValue: Int32) {
        self.rawValue = rawValue
    }

    /// `ZMQ_POLLIN`: at least one whole message can be received without blocking.
    public static let pollIn = SocketEvents(rawValue: Int32(ZMQ_POLLIN))
    /// `ZMQ_POLLOUT`: at least one message can be sent without blocking.
    public static let pollOut = SocketEvents(rawValue: Int32(ZMQ_POLLOUT))
    /// `ZMQ_POLLERR`: an error condition (only meaningful for plain fds in `zmq_poll`).
    public static let pollError = SocketEvents(rawValue: Int32(ZMQ_POLLERR))
}
