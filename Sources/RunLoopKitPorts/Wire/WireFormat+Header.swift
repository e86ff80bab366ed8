@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The header frame of every message (docs/wire-format.md, "Header").
extension WireFormat {
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
            hasPortComponent ? frame[headerFixedSize + index] : kindData
        }
    }

    static func readHeader(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> Header {
        guard bytes.count >= headerFixedSize else { throw .shortFrame("header (\(bytes.count) bytes)") }
        // The magic as one load: 4 bytes compared at once.
        let magic = UInt32(headerMagic.0) | UInt32(headerMagic.1) << 8 | UInt32(headerMagic.2) << 16 | UInt32(headerMagic.3) << 24
        guard UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt32.self)) == magic else {
            throw .badMagic
        }
        let versionByte = bytes[4]
        guard versionByte == version || versionByte == packedVersion else { throw .unsupportedVersion(versionByte) }
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
        let msgid = UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self))
        var hasPortComponent = false
        for index in 0..<count {
            let kind = bytes[headerFixedSize + index]
            guard kind == kindData || kind == kindPort else { throw .unknownComponentKind(kind) }
            hasPortComponent = hasPortComponent || kind == kindPort
        }
        let traceID = traced
            ? UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: headerFixedSize + count, as: UInt64.self)) : nil
        return Header(msgid: msgid, hasReplyPort: flags & flagHasReplyPort != 0, componentCount: count,
                      isPacked: isPacked, size: size, hasPortComponent: hasPortComponent, traceID: traceID)
    }
}
