@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The header frame of every message (docs/wire-format.md, "Header").
extension WireFormat {
    /// Where a tcp message goes (version 3's destination field): the
    /// receiving process's instance, which a receiver checks is its own,
    /// and the port's id behind its endpoint.
    struct Destination: Hashable, Sendable {
        let instance: ProcessInstance
        let portID: UInt64
    }

    /// The header's size for `componentCount` components.
    static func headerSize(componentCount: Int, traced: Bool) -> Int {
        headerFixedSize + componentCount + (traced ? traceIDSize : 0)
    }

    /// Writes the header into `buffer` (at least `headerSize` bytes);
    /// returns the size used.
    static func writeHeader(
        into buffer: UnsafeMutableRawBufferPointer, msgid: UInt32, hasReplyPort: Bool,
        components: [PortMessage.Component], traceID: UInt64? = nil, packed: Bool = false
    ) -> Int {
        let size = writeHeader(into: buffer, msgid: msgid, hasReplyPort: hasReplyPort, dataComponents: components.count,
                               traceID: traceID, packed: packed)
        for index in components.indices where components[index].isPort {
            buffer[headerFixedSize + index] = kindPort
        }
        return size
    }

    /// Writes the header of a message of `dataComponents` components, all
    /// data; returns the size used.
    static func writeHeader(
        into buffer: UnsafeMutableRawBufferPointer, msgid: UInt32, hasReplyPort: Bool,
        dataComponents count: Int, traceID: UInt64?, packed: Bool
    ) -> Int {
        buffer[0] = headerMagic.0
        buffer[1] = headerMagic.1
        buffer[2] = headerMagic.2
        buffer[3] = headerMagic.3
        buffer[4] = packed ? packedVersion : version
        buffer[5] = (hasReplyPort ? flagHasReplyPort : 0) | (traceID == nil ? 0 : flagHasTraceID)
        buffer.storeBytes(of: UInt16(count).littleEndian, toByteOffset: 6, as: UInt16.self)
        buffer.storeBytes(of: msgid.littleEndian, toByteOffset: 8, as: UInt32.self)
        for index in 0..<count { buffer[headerFixedSize + index] = kindData }
        guard let traceID else { return headerFixedSize + count }
        buffer.storeBytes(of: traceID.littleEndian, toByteOffset: headerFixedSize + count, as: UInt64.self)
        return headerFixedSize + count + traceIDSize
    }

    // MARK: - Version 3 (tcp, and a trace context on any transport)

    /// The size of the header (without extension) that `bytes`, a version-1
    /// or -2 header frame written by this side, starts with.
    private static func writtenHeaderSize(_ bytes: UnsafeRawBufferPointer) -> Int {
        let count = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        return headerSize(componentCount: count, traced: bytes[5] & flagHasTraceID != 0)
    }

    /// Makes the packed (version-2) frame written at
    /// `buffer[fields.areaSize...]` a version-3 one in `buffer`: its header
    /// moves to the start, marked version 3, and the extension area with
    /// `fields` fills the gap before the records, which stay where they
    /// were written. How a tcp send, or a send with a trace context,
    /// writes its frame, so that other sends pay nothing for either.
    static func extendPacked(_ buffer: UnsafeMutableRawBufferPointer, with fields: ExtensionFields) {
        fields.write(into: buffer, at: moveHeaderForExtension(buffer, areaSize: fields.areaSize))
    }

    /// `extendPacked(_:with:)` for the usual tcp send: an area holding
    /// `destination` alone (`destinationAreaSize` bytes), with no trace
    /// context to copy or look at.
    static func extendPacked(_ buffer: UnsafeMutableRawBufferPointer, destination: Destination) {
        // What `ExtensionFields.write` writes for a destination alone, as
        // five stores: every tcp send comes here.
        let area = buffer.baseAddress! + moveHeaderForExtension(buffer, areaSize: destinationAreaSize)
        area.storeBytes(of: UInt32(destinationAreaSize - extensionLengthSize).littleEndian, as: UInt32.self)
        area.storeBytes(of: destinationFieldHead, toByteOffset: extensionLengthSize, as: UInt32.self)
        let field = extensionLengthSize + extensionFieldHeaderSize
        area.storeBytes(of: destination.instance.high.littleEndian, toByteOffset: field, as: UInt64.self)
        area.storeBytes(of: destination.instance.low.littleEndian, toByteOffset: field + 8, as: UInt64.self)
        area.storeBytes(of: destination.portID.littleEndian, toByteOffset: field + 16, as: UInt64.self)
    }

    /// The extension area of a destination alone.
    static let destinationAreaSize = extensionLengthSize + extensionFieldHeaderSize + destinationFieldSize

    /// Moves the header written at `buffer[areaSize...]` to the start,
    /// marked version 3; returns where the area goes (after the header).
    @inline(__always)
    private static func moveHeaderForExtension(_ buffer: UnsafeMutableRawBufferPointer, areaSize: Int) -> Int {
        let written = UnsafeRawBufferPointer(rebasing: buffer[areaSize...])
        let size = writtenHeaderSize(written)
        buffer.baseAddress!.copyMemory(from: written.baseAddress!, byteCount: size)
        buffer[4] = extendedVersion
        return size
    }

    /// A multipart (version-1) header frame as version 3: the same header,
    /// marked version 3 and multipart, then the extension area.
    static func extendedMultipartHeader(_ header: UnsafeRawBufferPointer, with fields: ExtensionFields) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: header.count + fields.areaSize)
        bytes.withUnsafeMutableBytes { buffer in
            buffer.baseAddress!.copyMemory(from: header.baseAddress!, byteCount: header.count)
            buffer[4] = extendedVersion
            buffer[5] |= flagMultipart
            fields.write(into: buffer, at: header.count)
        }
        return bytes
    }

    struct Header {
        let msgid: UInt32
        let hasReplyPort: Bool
        let componentCount: Int
        /// Version 2: the components follow the header in its own frame.
        let isPacked: Bool
        /// The header's own bytes; in a packed frame, where the records start.
        let size: Int
        /// Whether any component is a port. When none is, the usual case,
        /// no kind byte is read again after `readHeader` checked them all.
        let hasPortComponent: Bool
        /// Present when the sender's tap was on.
        let traceID: UInt64?
        /// Version 3 or 5 with a trace context (`traceContext(ofHeader:)` reads it).
        var hasTraceContext = false
        /// Where the component kinds start in the frame: at the fixed
        /// header's end, or after version 5's varints (at most 48: three of
        /// up to 10 bytes each, as a peer may write them longer than
        /// needed; 35 as RunLoopKit writes them). One byte, in the padding
        /// after the fields above: a header is copied at every delivery.
        var kindsOffset = UInt8(WireFormat.headerFixedSize)
        /// Version 5: each record's length is a varint, not 4 bytes.
        var compactRecords: Bool { kindsOffset != WireFormat.headerFixedSize }
        var frameCount: Int { isPacked ? 1 : 1 + componentCount + (hasReplyPort ? 1 : 0) }
        /// Components, then the reply port's descriptor if there is one.
        var recordCount: Int { componentCount + (hasReplyPort ? 1 : 0) }
        /// The usual message: one data component and nothing else (no port,
        /// no reply port), whose one record is all a packed frame holds
        /// after the header.
        var isOneDataComponent: Bool { componentCount == 1 && !hasReplyPort && !hasPortComponent }

        /// No message: what a reused in-place message holds between messages.
        static let none = Header(msgid: 0, hasReplyPort: false, componentCount: 0, isPacked: true, size: 0,
                                 hasPortComponent: false, traceID: nil)

        /// `kindData` or `kindPort`: the kind of component `index`, read
        /// from `frame`, the header's frame that `readHeader` read. (Kept
        /// as a flag, not an array of kinds: a header is a plain value that
        /// costs no reference counting on the message path.)
        func kind(at index: Int, in frame: UnsafeRawBufferPointer) -> UInt8 {
            hasPortComponent ? frame[Int(kindsOffset) + index] : kindData
        }
    }

    /// The magic as the word a 4-byte load from the frame gives: compared
    /// at once.
    private static var headerMagicWord: UInt32 {
        @inline(__always) get {
            UInt32(littleEndian: UInt32(headerMagic.0) | UInt32(headerMagic.1) << 8 | UInt32(headerMagic.2) << 16 | UInt32(headerMagic.3) << 24)
        }
    }

    static func readHeader(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> Header {
        guard bytes.count >= headerFixedSize else { throw .shortFrame("header (\(bytes.count) bytes)") }
        guard bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self) == headerMagicWord else {
            return try readHeaderWithoutMagic(bytes)
        }
        let versionByte = bytes[4]
        guard versionByte == version || versionByte == packedVersion else {
            // Version 3 (tcp) apart, so that inproc and ipc pay nothing for it.
            if versionByte == extendedVersion { return try readExtendedHeader(bytes).header }
            throw .unsupportedVersion(versionByte)
        }
        let isPacked = versionByte == packedVersion
        let flags = bytes[5]
        guard flags & ~knownFlags == 0 else { throw .unknownFlags(flags) }
        let count = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        guard count <= maxComponents else { throw .tooManyComponents(count) }
        let traced = flags & flagHasTraceID != 0
        let size = headerSize(componentCount: count, traced: traced)
        // A packed frame goes on with its records; a multipart header ends here.
        guard isPacked ? bytes.count >= size : bytes.count == size else {
            throw .shortFrame("header: \(bytes.count) bytes for \(count) components\(traced ? " and a trace id" : "")")
        }
        return try header(bytes, flags: flags, count: count, isPacked: isPacked, size: size)
    }

    /// `readHeader` for a frame without the magic: version 5, whose version
    /// byte comes first, or a frame refused. Apart, so that inproc and ipc
    /// pay nothing for it.
    @inline(never)
    private static func readHeaderWithoutMagic(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> Header {
        guard bytes[0] == compactVersion else { throw .badMagic }
        return try readCompactHeader(bytes).header
    }

    /// Version 3: its flags may say multipart, and an extension area
    /// follows the fixed fields.
    @inline(never)
    private static func readExtendedHeader(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> (header: Header, destination: Destination?) {
        let flags = bytes[5]
        guard flags & ~(knownFlags | flagMultipart) == 0 else { throw .unknownFlags(flags) }
        let isPacked = flags & flagMultipart == 0
        let count = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        guard count <= maxComponents else { throw .tooManyComponents(count) }
        let area = try readExtension(bytes, at: headerSize(componentCount: count, traced: flags & flagHasTraceID != 0))
        // Checked here, so that a malformed context drops the message; made again by the decoder.
        let hasTraceContext = area.traceParent != nil || area.traceState != nil ? try area.trace(in: bytes) != nil : false
        guard isPacked ? bytes.count >= area.end : bytes.count == area.end else {
            throw .shortFrame("header: \(bytes.count) bytes for \(count) components and an extension area")
        }
        var read = try header(bytes, flags: flags, count: count, isPacked: isPacked, size: area.end)
        read.hasTraceContext = hasTraceContext
        return (read, area.destination)
    }

    /// The header whose fixed fields were checked: its kinds read (each
    /// one checked), its msgid and trace id.
    @inline(__always)
    private static func header(
        _ bytes: UnsafeRawBufferPointer, flags: UInt8, count: Int, isPacked: Bool, size: Int
    ) throws(DecodeError) -> Header {
        let msgid = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        var hasPortComponent = false
        for index in 0..<count {
            let kind = bytes[headerFixedSize + index]
            guard kind == kindData || kind == kindPort else { throw .unknownComponentKind(kind) }
            hasPortComponent = hasPortComponent || kind == kindPort
        }
        let traceID = flags & flagHasTraceID != 0
            ? UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: headerFixedSize + count, as: UInt64.self)) : nil
        return Header(msgid: msgid, hasReplyPort: flags & flagHasReplyPort != 0, componentCount: count,
                      isPacked: isPacked, size: size, hasPortComponent: hasPortComponent, traceID: traceID)
    }

    /// What `readHeader` reads, and the destination field (version 3; nil
    /// for an earlier version or none): what a tcp socket's reader routes
    /// by (kept out of `Header`, which every delivery copies). The reader
    /// hands the header with the message, which is then not read again
    /// (`IncomingFrames.checkedHeader`). Inlined into the reader: the
    /// header is then copied once out of the version's reader, not twice.
    @inline(__always)
    static func routedHeader(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> (header: Header, destination: Destination?) {
        // Version 5 first: what a RunLoopKit peer sends most messages as.
        if bytes.count > 0 && bytes[0] == compactVersion {
            let (header, destination) = try readCompactHeader(bytes)
            return (header, destination)
        }
        // Version 3 read once (what readHeader checks first, then the rest
        // and the extension area in one pass): every tcp message comes here.
        guard bytes.count >= headerFixedSize, bytes[4] == extendedVersion,
            bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self) == headerMagicWord
        else {
            return (try readHeader(bytes), nil)
        }
        return try readExtendedHeader(bytes)
    }

    /// The trace context a version-3 header frame carries (its fields
    /// checked as `readHeader` checks them), or nil.
    static func traceContext(ofHeader bytes: UnsafeRawBufferPointer) -> PortTraceContext? {
        if bytes.count > 0 && bytes[0] == compactVersion { return compactTraceContext(bytes) }
        guard bytes.count >= headerFixedSize, bytes[4] == extendedVersion else { return nil }
        let count = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        return try? readExtension(bytes, at: headerSize(componentCount: count, traced: bytes[5] & flagHasTraceID != 0)).trace(in: bytes)
    }

    /// Where version 3's extension area (or version 5's) ends and what its
    /// known fields hold: plain values, so that reading it copies nothing counted.
    struct ExtensionArea {
        let end: Int
        var destination: Destination?
        /// Where the traceparent field's bytes start.
        var traceParent: Int?
        var traceState: Range<Int>?

        init(end: Int, destination: Destination? = nil) {
            self.end = end
            self.destination = destination
        }

        /// The trace context its fields hold, or nil; throws if W3C calls it
        /// invalid, or a tracestate comes without a traceparent.
        func trace(in bytes: UnsafeRawBufferPointer) throws(DecodeError) -> PortTraceContext? {
            guard let traceParent else {
                if traceState != nil { throw .badExtension("a tracestate field without a traceparent field") }
                return nil
            }
            return try WireFormat.traceContext(bytes, at: traceParent, state: traceState)
        }
    }

    /// Reads version 3's extension area at `start` (its length is there):
    /// returns where the header ends and where its fields are. Fields of a
    /// type this side does not know are stepped over, so that a later field
    /// needs no new version; a field that runs past the area, a second one
    /// of a kind or one of the wrong size is malformed (and a trace context
    /// W3C calls invalid, which `ExtensionArea.trace(in:)` finds).
    @inline(never)
    static func readExtension(_ bytes: UnsafeRawBufferPointer, at start: Int) throws(DecodeError) -> ExtensionArea {
        // What every tcp send without a trace context writes, a destination
        // alone, read in a few instructions: each tcp message is read twice,
        // and its checks and errors are code a round trip would fetch.
        let destinationOnly = extensionFieldHeaderSize + destinationFieldSize
        if bytes.count >= start + extensionLengthSize + destinationOnly,
            bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self) == UInt32(destinationOnly).littleEndian,
            bytes.loadUnaligned(fromByteOffset: start + extensionLengthSize, as: UInt32.self) == destinationFieldHead
        {
            let areaStart = start + extensionLengthSize
            let field = areaStart + extensionFieldHeaderSize
            return ExtensionArea(end: areaStart + destinationOnly, destination: destination(bytes, at: field))
        }
        return try readExtensionFields(bytes, at: start)
    }

    /// `readExtension`'s every other case: the checks, and the fields one by one.
    @inline(never)
    private static func readExtensionFields(_ bytes: UnsafeRawBufferPointer, at start: Int) throws(DecodeError) -> ExtensionArea {
        guard bytes.count >= start + extensionLengthSize else {
            throw .shortFrame("header: \(bytes.count) bytes, no room for the extension area's length")
        }
        let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: start, as: UInt32.self)))
        guard length <= maxExtensionBytes else { throw .badExtension("\(length) bytes, over the limit of \(maxExtensionBytes)") }
        let areaStart = start + extensionLengthSize
        guard bytes.count - areaStart >= length else {
            throw .shortFrame("extension area: \(length) bytes announced, \(bytes.count - areaStart) in the frame")
        }
        let end = areaStart + length
        var offset = areaStart
        var area = ExtensionArea(end: end)
        while offset < end {
            guard end - offset >= extensionFieldHeaderSize else { throw .badExtension("a field's type and length run past the area") }
            let type = UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt16.self))
            let size = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 2, as: UInt16.self)))
            offset += extensionFieldHeaderSize
            guard end - offset >= size else { throw .badExtension("field \(type) announces \(size) bytes, \(end - offset) are left") }
            switch type {
            case fieldDestination:
                guard size == destinationFieldSize else { throw .badExtension("a destination field of \(size) bytes, not \(destinationFieldSize)") }
                guard area.destination == nil else { throw .badExtension("two destination fields") }
                area.destination = destination(bytes, at: offset)
            case fieldTraceParent:
                guard size == traceParentFieldSize else { throw .badExtension("a traceparent field of \(size) bytes, not \(traceParentFieldSize)") }
                guard area.traceParent == nil else { throw .badExtension("two traceparent fields") }
                area.traceParent = offset
            case fieldTraceState:
                guard size >= 1, size <= PortTraceContext.maxTraceStateBytes else {
                    throw .badExtension("a tracestate field of \(size) bytes, not 1 to \(PortTraceContext.maxTraceStateBytes)")
                }
                guard area.traceState == nil else { throw .badExtension("two tracestate fields") }
                area.traceState = offset..<(offset + size)
            default:
                break
            }
            offset += size
        }
        return area
    }

    /// A destination field's type and size as they lie in a frame.
    private static let destinationFieldHead = (UInt32(fieldDestination) | UInt32(destinationFieldSize) << 16).littleEndian

    /// The destination field's bytes at `offset`.
    @inline(__always)
    private static func destination(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Destination {
        Destination(
            instance: instance(bytes, at: offset),
            portID: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 16, as: UInt64.self)))
    }

    /// The traceparent field at `offset` and the tracestate in `state`.
    fileprivate static func traceContext(
        _ bytes: UnsafeRawBufferPointer, at offset: Int, state: Range<Int>?
    ) throws(DecodeError) -> PortTraceContext {
        guard bytes[offset] != 0xFF else { throw .badExtension("traceparent version 255, which W3C calls invalid") }
        var text: String?
        if let state {
            guard let decoded = String(validating: UnsafeRawBufferPointer(rebasing: bytes[state]), as: UTF8.self) else {
                throw .badExtension("a tracestate field that is not UTF-8")
            }
            text = decoded
        }
        guard let context = PortTraceContext(
            traceIDHigh: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 1, as: UInt64.self)),
            traceIDLow: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 9, as: UInt64.self)),
            parentID: UInt64(bigEndian: bytes.loadUnaligned(fromByteOffset: offset + 17, as: UInt64.self)),
            flags: bytes[offset + 25], traceState: text)
        else { throw .badExtension("a traceparent with a trace id or parent id of zeros, which W3C calls invalid") }
        return context
    }
}
