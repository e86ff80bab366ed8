@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Version 5, the compact form of a packed message over tcp
/// (docs/wire-format.md, "Version 5"): the version byte first (no magic:
/// the connection's hello vouches for its peer), the flags, the
/// destination's instance, then the destination's port id, the msgid and
/// the component count as varints, and records whose lengths are varints,
/// a version-4 reply port in its short form. A request of 64 bytes with a
/// reply port takes 90 bytes, two of CURVE's 64-byte cipher blocks where
/// version 3's 133 take three. Written only to a peer whose hello or
/// welcome said it reads version 5 (`readsFrame`), for a message without
/// a trace context up to `compactLimit`.
extension WireFormat {
    static let compactVersion: UInt8 = 5
    /// The version byte, the flags and the destination's instance.
    static let compactFixedSize = 18
    /// Version 5: an extension area (version 3's, without a destination
    /// field) follows the trace id.
    static let flagHasExtensionArea: UInt8 = 1 << 3
    /// Version 5: one kind byte per component follows the component count
    /// (written only when a component is a port; all are data without it).
    static let flagHasKinds: UInt8 = 1 << 4
    static let compactKnownFlags = flagHasReplyPort | flagHasTraceID | flagHasExtensionArea | flagHasKinds
    /// RunLoopKit writes version 5 for a message whose packed (version-2)
    /// form takes at most this many bytes, where the framing is a part of
    /// the message worth saving; version 3 above it.
    static let compactLimit = 4096
    /// The most a varint of 64 bits takes.
    static let maxVarintSize = 10

    // MARK: - Varints (unsigned LEB128: 7 bits a byte, low bits first)

    @inline(__always)
    static func varintSize(_ value: UInt64) -> Int {
        value < 0x80 ? 1 : (64 - value.leadingZeroBitCount + 6) / 7
    }

    /// Writes `value` at `offset`; returns where the next field starts.
    @inline(__always)
    static func writeVarint(_ value: UInt64, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        var value = value
        var offset = offset
        while value >= 0x80 {
            buffer[offset] = UInt8(truncatingIfNeeded: value) | 0x80
            value >>= 7
            offset += 1
        }
        buffer[offset] = UInt8(value)
        return offset + 1
    }

    /// The varint at `offset`, which moves past it; nil if it runs past
    /// the frame or over 64 bits.
    @inline(__always)
    static func readVarint(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        guard offset < bytes.count else { return nil }
        let first = bytes[offset]
        guard first >= 0x80 else {
            offset += 1
            return UInt64(first)
        }
        return readLongVarint(bytes, at: &offset)
    }

    /// `readVarint` past its first byte: a length over 127, a large port id.
    @inline(never)
    private static func readLongVarint(_ bytes: UnsafeRawBufferPointer, at offset: inout Int) -> UInt64? {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        var at = offset
        while at < bytes.count {
            let byte = bytes[at]
            at += 1
            // The tenth byte holds bit 63 alone.
            if shift == 63 && byte > 1 { return nil }
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 {
                offset = at
                return value
            }
            shift += 7
        }
        return nil
    }

    // MARK: - Writing

    /// The most bytes a message whose version-2 form takes `packedSize`
    /// bytes takes in version 5: the instance and the destination's port
    /// id are what version 2 lacks; every other field and every record
    /// length is no longer than version 2's (a packed message's lengths
    /// fit in three varint bytes).
    static func compactCapacity(packedSize: Int) -> Int {
        packedSize + compactFixedSize + maxVarintSize
    }

    /// Writes a message in version 5 to `destination` into `buffer` (at
    /// least `compactCapacity` bytes): each component and the reply port's
    /// descriptor a record, a version-4 descriptor in its short form.
    /// Returns the size used. No extension area: a message with a trace
    /// context goes as version 3.
    static func writeCompact(
        into buffer: UnsafeMutableRawBufferPointer, to destination: Destination, msgid: UInt32,
        components: [PortMessage.Component], replyDescriptor: [UInt8]?, traceID: UInt64?, relativeLimit: UInt16
    ) -> Int {
        var hasPort = false
        for index in components.indices where components[index].isPort {
            hasPort = true
            break
        }
        var offset = writeCompactHead(
            into: buffer, to: destination, msgid: msgid, count: components.count, hasReplyPort: replyDescriptor != nil,
            hasKinds: hasPort, traceID: traceID)
        if _slowPath(hasPort) {
            // The kinds sit before the trace id, which the head wrote after room for them.
            for index in components.indices { buffer[offset + index] = components[index].isPort ? kindPort : kindData }
            offset += components.count + (traceID == nil ? 0 : traceIDSize)
        }
        // By index, each component read in place (no retain and release of
        // its Data or Port); each record at the offset the last returned.
        for index in components.indices {
            offset = components[index].writeCompactRecord(into: buffer, at: offset, relativeLimit: relativeLimit)
        }
        guard let replyDescriptor else { return offset }
        let at = offset
        return replyDescriptor.withUnsafeBytes { writeCompactDescriptor($0, into: buffer, at: at) }
    }

    /// `writeCompact` for a message of one data component, `bytes`.
    static func writeCompact(
        into buffer: UnsafeMutableRawBufferPointer, to destination: Destination, msgid: UInt32, bytes: UnsafeRawBufferPointer,
        replyDescriptor: [UInt8]?, traceID: UInt64?
    ) -> Int {
        var offset = writeCompactHead(
            into: buffer, to: destination, msgid: msgid, count: 1, hasReplyPort: replyDescriptor != nil, hasKinds: false,
            traceID: traceID)
        offset = writeCompactRecord(bytes, into: buffer, at: offset)
        guard let replyDescriptor else { return offset }
        let at = offset
        return replyDescriptor.withUnsafeBytes { writeCompactDescriptor($0, into: buffer, at: at) }
    }

    /// The version byte, the flags, the destination, the msgid and the
    /// count; then, with `hasKinds`, room for the kinds (the caller writes
    /// them), and the trace id. Returns where the kinds go (`hasKinds`),
    /// else where the records start.
    @inline(__always)
    private static func writeCompactHead(
        into buffer: UnsafeMutableRawBufferPointer, to destination: Destination, msgid: UInt32, count: Int,
        hasReplyPort: Bool, hasKinds: Bool, traceID: UInt64?
    ) -> Int {
        buffer[0] = compactVersion
        buffer[1] = (hasReplyPort ? flagHasReplyPort : 0) | (traceID == nil ? 0 : flagHasTraceID) | (hasKinds ? flagHasKinds : 0)
        buffer.storeBytes(of: destination.instance.high.littleEndian, toByteOffset: 2, as: UInt64.self)
        buffer.storeBytes(of: destination.instance.low.littleEndian, toByteOffset: 10, as: UInt64.self)
        var offset = writeVarint(destination.portID, into: buffer, at: compactFixedSize)
        offset = writeVarint(UInt64(msgid), into: buffer, at: offset)
        offset = writeVarint(UInt64(count), into: buffer, at: offset)
        guard _slowPath(traceID != nil), let traceID else { return offset }
        let traceAt = offset + (hasKinds ? count : 0)
        buffer.storeBytes(of: traceID.littleEndian, toByteOffset: traceAt, as: UInt64.self)
        return hasKinds ? offset : traceAt + traceIDSize
    }

    /// One record: its length as a varint, then its bytes.
    @inline(__always)
    static func writeCompactRecord(_ bytes: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        let start = writeVarint(UInt64(bytes.count), into: buffer, at: offset)
        if let base = bytes.baseAddress, !bytes.isEmpty {
            (buffer.baseAddress! + start).copyMemory(from: base, byteCount: bytes.count)
        }
        return start + bytes.count
    }

    /// A descriptor's record: a 16-byte version-4 one in its short form
    /// (`04`, the endpoint's position, the port id as a varint), any other
    /// as it is.
    static func writeCompactDescriptor(_ descriptor: UnsafeRawBufferPointer, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        guard descriptor.count == relativeDescriptorSize && descriptor[4] == descriptorVersionRelative else {
            return writeCompactRecord(descriptor, into: buffer, at: offset)
        }
        let portID = UInt64(littleEndian: descriptor.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        let start = writeVarint(UInt64(2 + varintSize(portID)), into: buffer, at: offset)
        buffer[start] = descriptorVersionRelative
        buffer[start + 1] = descriptor[6]
        return writeVarint(portID, into: buffer, at: start + 2)
    }

    // MARK: - Reading

    /// Where a version-5 frame's fields lie, its fixed fields checked.
    struct CompactLayout {
        let flags: UInt8
        let destination: Destination
        let msgid: UInt32
        let componentCount: Int
        /// Where the kinds are (with `flagHasKinds`), then the trace id, then the area.
        let kindsOffset: Int
        /// Where the extension area starts (with `flagHasExtensionArea`), or the records.
        let areaOffset: Int
    }

    /// Reads a version-5 frame's fields up to its extension area. Inlined
    /// into its callers (`readCompactHeader`, out of line itself): the
    /// layout, 56 bytes, is then never copied out and back.
    @inline(__always)
    static func compactLayout(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> CompactLayout {
        guard _fastPath(bytes.count > compactFixedSize) else { throw .shortFrame("version-5 header (\(bytes.count) bytes)") }
        let flags = bytes[1]
        guard _fastPath(flags & ~compactKnownFlags == 0) else { throw .unknownFlags(flags) }
        var offset = compactFixedSize
        guard let portID = readVarint(bytes, at: &offset) else { throw .shortFrame("version-5 header: the port id's varint") }
        guard let msgid = readVarint(bytes, at: &offset), msgid <= UInt64(UInt32.max) else {
            throw .shortFrame("version-5 header: the msgid's varint (or one over 32 bits)")
        }
        guard let count = readVarint(bytes, at: &offset) else { throw .shortFrame("version-5 header: the component count's varint") }
        guard _fastPath(count <= UInt64(maxComponents)) else { throw .tooManyComponents(count > UInt64(Int.max) ? Int.max : Int(count)) }
        let kindsOffset = offset
        let areaOffset = offset + (flags & flagHasKinds != 0 ? Int(count) : 0) + (flags & flagHasTraceID != 0 ? traceIDSize : 0)
        guard _fastPath(bytes.count >= areaOffset) else { throw .shortFrame("version-5 header: \(bytes.count) bytes, its kinds and trace id run past them") }
        return CompactLayout(
            flags: flags, destination: Destination(instance: instance(bytes, at: 2), portID: portID), msgid: UInt32(msgid),
            componentCount: Int(count), kindsOffset: kindsOffset, areaOffset: areaOffset)
    }

    /// A version-5 frame's header and destination, every header field
    /// checked (the records are checked as they are read).
    @inline(never)
    static func readCompactHeader(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> (header: Header, destination: Destination) {
        let layout = try compactLayout(bytes)
        let count = layout.componentCount
        var hasPortComponent = false
        if layout.flags & flagHasKinds != 0 {
            for index in 0..<count {
                let kind = bytes[layout.kindsOffset + index]
                guard kind == kindData || kind == kindPort else { throw .unknownComponentKind(kind) }
                hasPortComponent = hasPortComponent || kind == kindPort
            }
        }
        let traceID = layout.flags & flagHasTraceID != 0
            ? UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: layout.areaOffset - traceIDSize, as: UInt64.self)) : nil
        var size = layout.areaOffset
        var hasTraceContext = false
        if layout.flags & flagHasExtensionArea != 0 {
            let area = try readExtension(bytes, at: layout.areaOffset)
            guard area.destination == nil else { throw .badExtension("a destination field in version 5, which names its destination before the area") }
            hasTraceContext = area.traceParent != nil || area.traceState != nil ? try area.trace(in: bytes) != nil : false
            size = area.end
        }
        var header = Header(
            msgid: layout.msgid, hasReplyPort: layout.flags & flagHasReplyPort != 0, componentCount: count, isPacked: true,
            size: size, hasPortComponent: hasPortComponent, traceID: traceID)
        header.hasTraceContext = hasTraceContext
        header.kindsOffset = UInt8(layout.kindsOffset)
        return (header, layout.destination)
    }

    /// The trace context of a version-5 frame, or nil.
    static func compactTraceContext(_ bytes: UnsafeRawBufferPointer) -> PortTraceContext? {
        guard let layout = try? compactLayout(bytes), layout.flags & flagHasExtensionArea != 0 else { return nil }
        return try? readExtension(bytes, at: layout.areaOffset).trace(in: bytes)
    }

    /// A short version-4 descriptor (`04`, the endpoint's position, the
    /// port id as a varint), read against `sender` as version 4 is.
    static func decodeShortRelativeDescriptor(_ bytes: UnsafeRawBufferPointer, sender: TCPHome?) throws(DecodeError) -> PortAddress {
        var offset = 2
        guard bytes.count > offset, let portID = readVarint(bytes, at: &offset), offset == bytes.count else {
            throw .badDescriptor("a short version-4 descriptor of \(bytes.count) bytes: not 04, a position and one varint")
        }
        guard let sender else {
            throw .badDescriptor("version 4 arrived where no sender's home frame came first (only over a tcp connection whose peer sent one)")
        }
        return try sender.address(portID: portID, listener: bytes[1])
    }
}
