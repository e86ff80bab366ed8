/// PortMessage → frames (docs/wire-format.md): checks a message against the
/// wire format's limits, then writes it, packed into one frame (version 2)
/// when it fits in `WireFormat.packLimit`, else as a header frame followed
/// by a frame per component and the reply port's descriptor (version 1).
///
/// Whether each port can travel to the destination is a port rule, not a
/// wire rule: the caller's `check` says, called for each port on the one
/// pass over the components that sizes them.
enum MessageEncoder {
    /// Encodes the message into a buffer that lives for the call, and calls
    /// `send` with its frames. Throws `.messageTooLarge`, before `send`,
    /// for a message over a limit.
    static func withFrames<R>(
        msgid: UInt32, components: [PortMessage.Component], replyPort: Port?, traceID: UInt64?,
        checkingPorts check: (Port, _ role: String) throws(PortError) -> Void,
        _ send: (OutgoingFrames) throws(PortError) -> R
    ) throws(PortError) -> R {
        guard components.count <= WireFormat.maxComponents else {
            throw .messageTooLarge("\(components.count) components, over the limit of \(WireFormat.maxComponents)")
        }
        var portDescriptors: [[UInt8]] = []
        // Every frame counts towards the limit, the header and descriptors
        // too, as the receiver counts them (docs/wire-format.md, "Limits").
        var totalBytes = WireFormat.headerSize(componentCount: components.count, traced: traceID != nil)
        for index in components.indices {
            switch components[index] {
            case .data:
                let count = components[index].dataCount
                guard count <= WireFormat.maxFrameBytes else {
                    throw .messageTooLarge("a data component of \(count) bytes, over the limit of \(WireFormat.maxFrameBytes)")
                }
                totalBytes += count
            case let .port(port):
                try check(port, "a port component")
                portDescriptors.append(port.descriptorBytes)
                totalBytes += port.descriptorBytes.count
            }
        }
        if let replyPort { try check(replyPort, "the reply port") }
        let replyDescriptor = replyPort?.descriptorBytes
        totalBytes += replyDescriptor?.count ?? 0
        guard totalBytes <= WireFormat.maxMessageBytes else {
            throw .messageTooLarge("\(totalBytes) bytes in all (header and descriptors included), over the limit of \(WireFormat.maxMessageBytes)")
        }
        // Constants from here on: the closure below captures them by value
        // (a captured `var` costs a dynamic exclusivity check per access).
        let descriptors = portDescriptors
        let records = components.count + (replyDescriptor == nil ? 0 : 1)
        let packedSize = WireFormat.packedSize(frameBytes: totalBytes, records: records)
        // The usual case: the whole message in one frame. A large one goes
        // as a frame per component, not copied into one buffer.
        let packed = packedSize <= WireFormat.packLimit
        let bufferSize = packed ? packedSize : WireFormat.headerSize(componentCount: components.count, traced: traceID != nil)
        return try withUnsafeTemporaryAllocation(byteCount: bufferSize, alignment: 8) { (buffer) throws(PortError) -> R in
            if packed {
                let size = WireFormat.writePacked(
                    into: buffer, msgid: msgid, components: components, portDescriptors: descriptors,
                    replyDescriptor: replyDescriptor, traceID: traceID)
                return try send(OutgoingFrames(packed: UnsafeRawBufferPointer(rebasing: buffer[..<size])))
            }
            let size = WireFormat.writeHeader(into: buffer, msgid: msgid, hasReplyPort: replyDescriptor != nil,
                                              components: components, traceID: traceID)
            return try send(OutgoingFrames(
                header: UnsafeRawBufferPointer(rebasing: buffer[..<size]), components: components,
                portDescriptors: descriptors, replyDescriptor: replyDescriptor))
        }
    }
}
