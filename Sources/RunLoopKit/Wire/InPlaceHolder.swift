/// Where a batch of messages read in place keeps the message its handler
/// is reading: the frames it arrived in (received straight into them, or
/// moved here when the readiness check read them ahead) and the port
/// components resolved from them. A `PortMessageView` reads it uncounted.
///
/// One per batch (`PortReceiver.takeHolder`), kept between batches, so
/// that a stream allocates nothing; a batch nested in a handler makes its
/// own, so that it never writes over the message an outer handler reads.
/// Closing the port from another thread never touches it.
///
/// Threading: the delivering batch's, on the loop thread; filled under
/// the receiver's lock.
final class InPlaceHolder {
    let frames = IncomingFrames()
    /// The port components of the message held, resolved, in component
    /// order: usually none.
    // @exclusivity(unchecked): written by the decoder under the receiver's
    // lock and read by the view on the same thread after it; never two at once.
    @exclusivity(unchecked) var ports: [Port] = []

    /// Forgets the message held (a large message's buffers released now);
    /// the ports array keeps its storage.
    func clear() {
        frames.clear()
        if !ports.isEmpty { ports.removeAll(keepingCapacity: true) }
    }
}
