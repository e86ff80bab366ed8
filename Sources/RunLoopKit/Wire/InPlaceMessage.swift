/// A received message checked and decoded where it lies, in the frames it
/// arrived in: what a `PortMessageView` reads. Nothing is copied: a data
/// component is its record in the packed frame, or its own frame in a
/// large (multipart) message. The frames are in the delivering batch's
/// holder (`PortReceiver.receiveInPlace`) until its next message.
///
/// Threading: the loop thread's, during one callout.
struct InPlaceMessage {
    let header: WireFormat.Header
    /// The frames holding the message: the delivering batch's holder, which
    /// the batch keeps alive. (Not counted here: a view is built per
    /// message, and every copy of a counted reference cost a retain.)
    unowned(unsafe) let frames: IncomingFrames
    /// The port components, resolved, in component order; nil when there
    /// is none, the usual case (an empty array still cost a retain and a
    /// release per message).
    let ports: [Port]?

    /// The header's frame: in a packed message, the whole message.
    var headerFrame: UnsafeRawBufferPointer { frames.firstBytes }

    /// The bytes of component `index`, a data component.
    func bytes(ofComponent index: Int) -> UnsafeRawBufferPointer {
        guard header.isPacked else { return frames[index + 1].unsafeBytes }
        return WireFormat.packedRecord(index, of: headerFrame, header: header)
    }

    /// The port of component `index`, a port component.
    func port(ofComponent index: Int) -> Port {
        var before = 0
        for earlier in 0..<index where header.kind(at: earlier, in: headerFrame) == WireFormat.kindPort { before += 1 }
        return ports![before]
    }

    func isPort(_ index: Int) -> Bool { header.kind(at: index, in: headerFrame) == WireFormat.kindPort }
}
