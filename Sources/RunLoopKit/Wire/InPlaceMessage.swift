/// A received message checked and decoded where it lies, in the frames it
/// arrived in: what a `PortMessageView` reads. Nothing is copied: a data
/// component is its record in the packed frame, or its own frame in a
/// large (multipart) message. The frames are in the delivering batch's
/// holder (`PortReceiver.receiveInPlace`) until its next message.
///
/// A plain value with no counted reference, so that making and dropping
/// one per message costs no reference counting.
///
/// Threading: the loop thread's, during one callout.
struct InPlaceMessage {
    let header: WireFormat.Header
    /// The holder of the message's frames and ports, which the delivering
    /// batch keeps alive. (Not counted here: every copy of a counted
    /// reference cost a retain and a release a message.)
    unowned(unsafe) let holder: InPlaceHolder
    /// Component 0's bytes when it is a data component, found while the
    /// message was checked: the component most messages are read for.
    let firstData: UnsafeRawBufferPointer

    /// The header's frame: in a packed message, the whole message.
    var headerFrame: UnsafeRawBufferPointer { holder.frames.firstBytes }

    /// The bytes of component `index`, a data component.
    func bytes(ofComponent index: Int) -> UnsafeRawBufferPointer {
        if index == 0 { return firstData }
        guard header.isPacked else { return holder.frames[index + 1].unsafeBytes }
        return WireFormat.packedRecord(index, of: headerFrame, header: header)
    }

    /// The port of component `index`, a port component.
    func port(ofComponent index: Int) -> Port {
        var before = 0
        for earlier in 0..<index where header.kind(at: earlier, in: headerFrame) == WireFormat.kindPort { before += 1 }
        return holder.ports[before]
    }

    func isPort(_ index: Int) -> Bool { header.kind(at: index, in: headerFrame) == WireFormat.kindPort }
}
