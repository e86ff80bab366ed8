/// A received message back into the frames it could have arrived in: how
/// the messages a stream took in but never handed out go back to their
/// port's queue (S-ASYNC-2, `PortReceiver.requeue`), to be decoded again
/// like any arrival, whichever kind of handler takes them.
extension PortMessage {
    /// The message's wire frames (docs/wire-format.md), with its trace
    /// context if it carried one (but no tap trace id): packed in one
    /// frame when it fits, else a header frame, a frame per component and
    /// the reply port's descriptor. It arrived within the wire limits, so
    /// it fits them again.
    func wireFrames() throws(PortError) -> [[UInt8]] {
        let encoder = try MessageEncoder.sizing(
            msgid: msgid, components: components, replyPort: replyPort, traceID: nil, checkingPorts: { _, _ in })
        let fields = traceContext.map { WireFormat.ExtensionFields(destination: nil, trace: $0) }
        if let size = encoder.packedSize {
            let gap = fields?.areaSize ?? 0
            var bytes = [UInt8](repeating: 0, count: gap + size)
            bytes.withUnsafeMutableBytes { buffer in
                encoder.writePacked(components, into: UnsafeMutableRawBufferPointer(rebasing: buffer[gap...]))
                if let fields { WireFormat.extendPacked(buffer, with: fields) }
            }
            return [bytes]
        }
        return try encoder.withMultipartFrames(components) { frames in
            var all = frames.allBytes
            if let fields { all[0] = WireFormat.extendedMultipartHeader(frames.header, with: fields) }
            return all
        }
    }
}

extension OutgoingFrames {
    /// Every frame's bytes, copied (`PortMessage.wireFrames`).
    var allBytes: [[UInt8]] {
        var frames: [[UInt8]] = [Array(header)]
        for component in components {
            switch component {
            case let .data(data): frames.append(Array(data))
            case let .port(port): frames.append(port.descriptorBytes)
            }
        }
        if let replyDescriptor { frames.append(replyDescriptor) }
        return frames
    }
}

extension IncomingFrames {
    /// Holds a message whose frames are `frames`, as if it had arrived
    /// (the bytes are copied).
    func hold(copiesOf frames: [[UInt8]]) {
        let joined = frames.flatMap { $0 }
        joined.withUnsafeBytes { all in
            var offset = 0
            let parts = frames.map { frame -> FuzzInput.Frame in
                defer { offset += frame.count }
                return (UnsafeRawBufferPointer(rebasing: all[offset..<offset + frame.count]), frame.count)
            }
            hold(parts)
        }
    }
}
