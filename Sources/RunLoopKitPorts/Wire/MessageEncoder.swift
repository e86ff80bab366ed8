@_spi(RunLoopKitInternals) import RunLoopKitCore

/// PortMessage → frames (docs/wire-format.md): checks a message against the
/// wire format's limits and sizes it, once; then writes it, packed into one
/// frame (version 2) when it fits in `WireFormat.packLimit`, else as a header
/// frame followed by a frame per component and the reply port's descriptor
/// (version 1).
///
/// Whether each port can travel to the destination is a port rule, not a
/// wire rule: the caller's `check` says, called for each port on the one
/// pass over the components that sizes them.
///
/// The components are not stored but passed again to the writing calls:
/// storing the array would retain and release it every send, and the send
/// channel writes the packed frame straight into the buffer libzmq sends
/// (`Socket.send(byteCount:write:)`), so the encoder is a few sizes and the
/// reply port's descriptor. A port component's descriptor is read from
/// its port when its record is written (an array of them, even empty,
/// would need a generic destroy every send).
struct MessageEncoder {
    let msgid: UInt32
    /// Present when the sender's tap is on.
    let traceID: UInt64?
    let replyDescriptor: [UInt8]?
    /// Which of this process's ports go as version-4 descriptors
    /// (`Port.descriptorBytes(relativeLimit:)`); 0: none.
    let relativeLimit: UInt16
    /// The packed frame's size; nil for a message over `WireFormat.packLimit`,
    /// which goes as a frame per component instead of being copied into one.
    let packedSize: Int?

    /// Checks and sizes the message. Throws `.messageTooLarge` for a message
    /// over a limit, and what `check` throws for a port. `relativeLimit`
    /// (the send channel's) is read only for a message that carries a port.
    /// Static functions, not initialisers: an initialiser takes its
    /// arguments owned, so every send retained and released its reply port
    /// (on the slow path a `Port` takes, its counts in a side table).
    static func sizing(
        msgid: UInt32, components: [PortMessage.Component], replyPort: Port?, traceID: UInt64?,
        carriedTo distance: PortRoute.Reach = .process, relativeLimit: () -> UInt16 = { 0 },
        checkingPorts check: (Port, _ role: String) throws(PortError) -> Void
    ) throws(PortError) -> MessageEncoder {
        guard _fastPath(components.count <= WireFormat.maxComponents) else {
            throw .messageTooLarge("\(components.count) components, over the limit of \(WireFormat.maxComponents)")
        }
        // Every frame counts towards the limit, the header and descriptors
        // too, as the receiver counts them (docs/wire-format.md, "Limits").
        var totalBytes = WireFormat.headerSize(componentCount: components.count, traced: traceID != nil)
        var relative: UInt16?
        // By index, each component read in place: a `for component in
        // components` would copy each one out, retaining and releasing its
        // Data or Port.
        for index in components.indices {
            if _slowPath(components[index].isPort) {
                guard case let .port(port) = components[index] else { continue }
                try check(port, "a port component")
                let limit = relative ?? relativeLimit()
                relative = limit
                totalBytes += port.descriptorBytes(relativeLimit: limit).count
            } else {
                let count = components[index].dataCount
                guard _fastPath(count <= WireFormat.maxFrameBytes) else {
                    throw .messageTooLarge("a data component of \(count) bytes, over the limit of \(WireFormat.maxFrameBytes)")
                }
                totalBytes += count
            }
        }
        let limit = relative ?? (replyPort == nil ? 0 : relativeLimit())
        let replyDescriptor = try self.replyDescriptor(of: replyPort, carriedTo: distance, relativeLimit: limit, checkingPorts: check)
        return try MessageEncoder(msgid: msgid, bytesBeforeReplyPort: totalBytes, records: components.count,
                                  replyDescriptor: replyDescriptor, traceID: traceID, relativeLimit: limit)
    }

    /// A message of one data component, `dataCount` bytes given as they
    /// are (`Port.send(msgid:bytes:replyPort:before:)`).
    static func sizing(
        msgid: UInt32, dataCount: Int, replyPort: Port?, traceID: UInt64?,
        carriedTo distance: PortRoute.Reach = .process, relativeLimit: () -> UInt16 = { 0 },
        checkingPorts check: (Port, _ role: String) throws(PortError) -> Void
    ) throws(PortError) -> MessageEncoder {
        guard _fastPath(dataCount <= WireFormat.maxFrameBytes) else {
            throw .messageTooLarge("a data component of \(dataCount) bytes, over the limit of \(WireFormat.maxFrameBytes)")
        }
        let totalBytes = WireFormat.headerSize(componentCount: 1, traced: traceID != nil) + dataCount
        let limit = replyPort == nil ? 0 : relativeLimit()
        let replyDescriptor = try self.replyDescriptor(of: replyPort, carriedTo: distance, relativeLimit: limit, checkingPorts: check)
        return try MessageEncoder(msgid: msgid, bytesBeforeReplyPort: totalBytes, records: 1,
                                  replyDescriptor: replyDescriptor, traceID: traceID, relativeLimit: limit)
    }

    /// The reply port's descriptor (`Port.descriptorBytes(relativeLimit:)`),
    /// checked: `check` is called only for a reply port that cannot go
    /// where the message goes, to say why. Its stored properties are read
    /// through the optional: a method called on the port, or the port
    /// bound, retained and released it, on its slow path.
    @inline(__always)
    private static func replyDescriptor(
        of replyPort: Port?, carriedTo distance: PortRoute.Reach, relativeLimit: UInt16,
        checkingPorts check: (Port, _ role: String) throws(PortError) -> Void
    ) throws(PortError) -> [UInt8]? {
        guard var descriptor = replyPort?.descriptorBytes else { return nil }
        // `canTravel`'s test, spelled out.
        if _slowPath(replyPort?.valid.load(ordering: .acquiring) != true || replyPort.unsafelyUnwrapped.address.reach < distance) {
            try check(replyPort.unsafelyUnwrapped, "the reply port")
        }
        if relativeLimit != 0, let relative = replyPort?.relativeDescriptor, Port.peerReads(relative, relativeLimit: relativeLimit) {
            descriptor = relative
        }
        return descriptor
    }

    /// The limit on the whole, the packed size.
    private init(
        msgid: UInt32, bytesBeforeReplyPort: Int, records: Int, replyDescriptor: [UInt8]?, traceID: UInt64?, relativeLimit: UInt16
    ) throws(PortError) {
        let totalBytes = bytesBeforeReplyPort + (replyDescriptor?.count ?? 0)
        guard totalBytes <= WireFormat.maxMessageBytes else {
            throw .messageTooLarge("\(totalBytes) bytes in all (header and descriptors included), over the limit of \(WireFormat.maxMessageBytes)")
        }
        let packedSize = WireFormat.packedSize(frameBytes: totalBytes, records: records + (replyDescriptor == nil ? 0 : 1))
        self.msgid = msgid
        self.traceID = traceID
        self.replyDescriptor = replyDescriptor
        self.relativeLimit = relativeLimit
        self.packedSize = packedSize <= WireFormat.packLimit ? packedSize : nil
    }

    /// Writes the packed frame into `buffer`, `packedSize` bytes;
    /// `components` are the ones the encoder was made with.
    func writePacked(_ components: [PortMessage.Component], into buffer: UnsafeMutableRawBufferPointer) {
        _ = WireFormat.writePacked(
            into: buffer, msgid: msgid, components: components, replyDescriptor: replyDescriptor, traceID: traceID,
            relativeLimit: relativeLimit)
    }

    /// Writes the packed frame of a message of one data component, `bytes`
    /// (the encoder made with `dataCount: bytes.count`).
    func writePacked(bytes: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer) {
        _ = WireFormat.writePacked(into: buffer, msgid: msgid, bytes: bytes, replyDescriptor: replyDescriptor, traceID: traceID)
    }

    /// Writes the message in version 5 to `destination` into `buffer`
    /// (`WireFormat.compactCapacity(packedSize:)` bytes); returns the size
    /// used. `components` are the ones the encoder was made with.
    func writeCompact(_ components: [PortMessage.Component], to destination: WireFormat.Destination, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        WireFormat.writeCompact(
            into: buffer, to: destination, msgid: msgid, components: components, replyDescriptor: replyDescriptor, traceID: traceID,
            relativeLimit: relativeLimit)
    }

    /// `writeCompact` for a message of one data component, `bytes`.
    func writeCompact(bytes: UnsafeRawBufferPointer, to destination: WireFormat.Destination, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        WireFormat.writeCompact(into: buffer, to: destination, msgid: msgid, bytes: bytes, replyDescriptor: replyDescriptor, traceID: traceID)
    }

    /// Calls `send` with the frames of a message over the pack limit: its
    /// header in a buffer that lives for the call, then `components` (the
    /// ones the encoder was made with) as they are.
    func withMultipartFrames<R>(
        _ components: [PortMessage.Component], _ send: (OutgoingFrames) throws(PortError) -> R
    ) throws(PortError) -> R {
        let size = WireFormat.headerSize(componentCount: components.count, traced: traceID != nil)
        return try withUnsafeTemporaryAllocation(byteCount: size, alignment: 8) { (buffer) throws(PortError) -> R in
            let written = WireFormat.writeHeader(into: buffer, msgid: msgid, hasReplyPort: replyDescriptor != nil,
                                                 components: components, traceID: traceID)
            return try send(OutgoingFrames(
                header: UnsafeRawBufferPointer(rebasing: buffer[..<written]), components: components,
                replyDescriptor: replyDescriptor, relativeLimit: relativeLimit))
        }
    }
}
