@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A received message checked and decoded where it lies, in the frames it
/// arrived in: what a `PortMessageView` reads. Nothing is copied: a data
/// component is its record in the packed frame, or its own frame in a
/// large (multipart) message.
///
/// One per batch of messages read in place (`PortReceiver.takeInPlaceMessage`),
/// filled again for each message (received straight into its frames, or
/// moved there when the readiness check read the message ahead) and kept
/// between batches, so that a stream allocates nothing. A batch nested in a
/// handler gets its own, so that it never writes over the message an outer
/// handler reads, and closing the port from another thread never touches
/// it. A view reads it uncounted: a view is three plain words, and making
/// one per message costs no reference counting.
///
/// Threading: the delivering batch's, on the loop thread; filled under
/// the receiver's lock, read by the handler after.
final class InPlaceMessage {
    // @exclusivity(unchecked) on the properties below: written by the
    // decoder under the receiver's lock and read by the view on the same
    // thread after it, never two at once; the dynamic check would run at
    // every access.
    let frames = IncomingFrames()
    /// The header, checked (`WireFormat.Header.none` while nothing is held).
    // U-IN-PLACE-MESSAGE (docs/unsafe-sites.md).
    @exclusivity(unchecked) var header = WireFormat.Header.none
    /// The port components, resolved, in component order: usually none.
    @exclusivity(unchecked) var ports: [Port] = []
    /// Component 0's bytes when it is a data component, found while the
    /// message was checked: the component most messages are read for.
    @exclusivity(unchecked) var firstData = UnsafeRawBufferPointer(start: nil, count: 0)

    /// Forgets the message held (a large message's buffers released now);
    /// the ports array keeps its storage.
    func clear() {
        frames.clear()
        forgetDecoded()
    }

    /// Forgets what decoding found, before the next message is received
    /// into the frames (which a receive or a move clears itself).
    // Inlined whatever the optimiser's budget: a call here is paid by
    // every message.
    @inline(__always)
    func forgetDecoded() {
        header = .none
        firstData = UnsafeRawBufferPointer(start: nil, count: 0)
        if !ports.isEmpty { ports.removeAll(keepingCapacity: true) }
    }

    /// The header's frame: in a packed message, the whole message.
    var headerFrame: UnsafeRawBufferPointer { frames.firstBytes }

    /// The bytes of component `index`, a data component.
    func bytes(ofComponent index: Int) -> UnsafeRawBufferPointer {
        if index == 0 { return firstData }
        guard header.isPacked else { return frames[index + 1].unsafeBytes }
        return WireFormat.packedRecord(index, of: headerFrame, header: header)
    }

    /// The port of component `index`, a port component.
    func port(ofComponent index: Int) -> Port {
        var before = 0
        for earlier in 0..<index where header.kind(at: earlier, in: headerFrame) == WireFormat.kindPort { before += 1 }
        return ports[before]
    }

    func isPort(_ index: Int) -> Bool { header.kind(at: index, in: headerFrame) == WireFormat.kindPort }
}
