import Glibc

/// The bytes a PortMessage travels as, in one of two forms: version 1, one
/// ZeroMQ multipart message made of a header frame, one frame per component
/// and, if there is one, the reply port's descriptor; or version 2, the same
/// header followed by every component and the reply port's descriptor in
/// one frame, each with its length (what RunLoopKit sends when the whole
/// message fits in `packLimit`: one frame costs libzmq one send and one
/// receive instead of 2 + C). docs/wire-format.md is the specification; this
/// file must agree with it. All integers are little-endian.
enum WireFormat {
    /// The multipart form, and the version of every port descriptor.
    static let version: UInt8 = 1
    /// The packed form: the whole message in one frame.
    static let packedVersion: UInt8 = 2
    /// The largest message RunLoopKit sends packed, all bytes counted.
    static let packLimit = 64 << 10
    /// Each record of a packed message starts with its length.
    static let recordLengthSize = 4
    /// "RLKP": a PortMessage header.
    static let headerMagic: (UInt8, UInt8, UInt8, UInt8) = (0x52, 0x4C, 0x4B, 0x50)
    /// "RLKD": a port descriptor.
    static let descriptorMagic: (UInt8, UInt8, UInt8, UInt8) = (0x52, 0x4C, 0x4B, 0x44)
    static let headerFixedSize = 12
    static let descriptorFixedSize = 28

    static let flagHasReplyPort: UInt8 = 1 << 0
    /// Set while the traffic tap is on: 8 bytes of trace id follow the
    /// kinds, so that the sniffer can pair each send with its delivery.
    static let flagHasTraceID: UInt8 = 1 << 1
    static let knownFlags: UInt8 = flagHasReplyPort | flagHasTraceID
    static let traceIDSize = 8

    static let kindData: UInt8 = 0
    static let kindPort: UInt8 = 1

    /// Limits, checked on both sides.
    static let maxComponents = 256
    static let maxFrameBytes = 64 << 20
    static let maxMessageBytes = 256 << 20
    static let maxIPCPathBytes = 107

    enum DecodeError: Error, Equatable, CustomStringConvertible {
        case shortFrame(String)
        case badMagic
        case unsupportedVersion(UInt8)
        case unknownFlags(UInt8)
        case unknownComponentKind(UInt8)
        case tooManyComponents(Int)
        case frameCountMismatch(expected: Int, got: Int)
        case frameTooLarge(Int)
        case badPackedRecords(String)
        case messageTooLarge(Int)
        case badDescriptor(String)

        var description: String {
            switch self {
            case let .shortFrame(what): "truncated \(what)"
            case .badMagic: "not a RunLoopKit message (bad magic)"
            case let .unsupportedVersion(version): "unsupported wire version \(version) (this side speaks \(WireFormat.version) and \(WireFormat.packedVersion))"
            case let .unknownFlags(flags): "unknown header flags 0x\(String(flags, radix: 16))"
            case let .unknownComponentKind(kind): "unknown component kind \(kind)"
            case let .tooManyComponents(count): "\(count) components, over the limit of \(WireFormat.maxComponents)"
            case let .frameCountMismatch(expected, got): "header announces \(expected) frames, message has \(got)"
            case let .frameTooLarge(size): "a frame of \(size) bytes, over the limit of \(WireFormat.maxFrameBytes)"
            case let .badPackedRecords(reason): "packed message: \(reason)"
            case let .messageTooLarge(size): "\(size) bytes in all, over the limit of \(WireFormat.maxMessageBytes)"
            case let .badDescriptor(reason): "bad port descriptor: \(reason)"
            }
        }
    }

    // MARK: - Header

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
        buffer[0] = headerMagic.0
        buffer[1] = headerMagic.1
        buffer[2] = headerMagic.2
        buffer[3] = headerMagic.3
        buffer[4] = packed ? packedVersion : version
        buffer[5] = (hasReplyPort ? flagHasReplyPort : 0) | (traceID == nil ? 0 : flagHasTraceID)
        buffer.storeBytes(of: UInt16(components.count).littleEndian, toByteOffset: 6, as: UInt16.self)
        buffer.storeBytes(of: msgid.littleEndian, toByteOffset: 8, as: UInt32.self)
        for (index, component) in components.enumerated() {
            if case .port = component { buffer[headerFixedSize + index] = kindPort } else { buffer[headerFixedSize + index] = kindData }
        }
        guard let traceID else { return headerFixedSize + components.count }
        buffer.storeBytes(of: traceID.littleEndian, toByteOffset: headerFixedSize + components.count, as: UInt64.self)
        return headerFixedSize + components.count + traceIDSize
    }

    struct Header {
        let msgid: UInt32
        let hasReplyPort: Bool
        let componentCount: Int
        /// Version 2: the components follow the header in its own frame.
        let isPacked: Bool
        /// The header's own bytes; in a packed frame, where the records start.
        let size: Int
        /// The kinds of a message with a port component; nil when every
        /// component is data, the usual case, which then costs no array.
        let mixedKinds: [UInt8]?
        /// Present when the sender's tap was on.
        let traceID: UInt64?
        var frameCount: Int { isPacked ? 1 : 1 + componentCount + (hasReplyPort ? 1 : 0) }
        /// Components, then the reply port's descriptor if there is one.
        var recordCount: Int { componentCount + (hasReplyPort ? 1 : 0) }

        /// `kindData` or `kindPort`: the kind of component `index`.
        func kind(at index: Int) -> UInt8 { mixedKinds?[index] ?? kindData }

        /// The kinds of all the components, in order.
        var kinds: [UInt8] { mixedKinds ?? Array(repeating: kindData, count: componentCount) }
    }

    static func readHeader(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> Header {
        guard bytes.count >= headerFixedSize else { throw .shortFrame("header (\(bytes.count) bytes)") }
        guard bytes[0] == headerMagic.0, bytes[1] == headerMagic.1, bytes[2] == headerMagic.2, bytes[3] == headerMagic.3 else {
            throw .badMagic
        }
        guard bytes[4] == version || bytes[4] == packedVersion else { throw .unsupportedVersion(bytes[4]) }
        let isPacked = bytes[4] == packedVersion
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
        var mixedKinds: [UInt8]?
        for index in 0..<count {
            let kind = bytes[headerFixedSize + index]
            guard kind == kindData || kind == kindPort else { throw .unknownComponentKind(kind) }
            if kind == kindPort && mixedKinds == nil {
                mixedKinds = Array(bytes[headerFixedSize..<headerFixedSize + count])
            }
        }
        let traceID = traced
            ? UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: headerFixedSize + count, as: UInt64.self)) : nil
        return Header(msgid: msgid, hasReplyPort: flags & flagHasReplyPort != 0, componentCount: count,
                      isPacked: isPacked, size: size, mixedKinds: mixedKinds, traceID: traceID)
    }

    // MARK: - The packed form (version 2)

    /// The packed size of a message whose multipart frames add up to
    /// `frameBytes` (header included), with `records` components and reply port.
    static func packedSize(frameBytes: Int, records: Int) -> Int { frameBytes + records * recordLengthSize }

    /// Writes a whole message in the packed form into `buffer` (at least
    /// `packedSize` bytes): the header with version 2, then each component
    /// and the reply port's descriptor as a length and its bytes. Returns
    /// the size used. `portDescriptors` are the port components', in order.
    static func writePacked(
        into buffer: UnsafeMutableRawBufferPointer, msgid: UInt32, components: [PortMessage.Component],
        portDescriptors: [[UInt8]], replyDescriptor: [UInt8]?, traceID: UInt64?
    ) -> Int {
        var offset = writeHeader(into: buffer, msgid: msgid, hasReplyPort: replyDescriptor != nil,
                                 components: components, traceID: traceID, packed: true)
        func record(_ bytes: UnsafeRawBufferPointer) {
            buffer.storeBytes(of: UInt32(bytes.count).littleEndian, toByteOffset: offset, as: UInt32.self)
            offset += recordLengthSize
            if let base = bytes.baseAddress, !bytes.isEmpty {
                (buffer.baseAddress! + offset).copyMemory(from: base, byteCount: bytes.count)
            }
            offset += bytes.count
        }
        var portsWritten = 0
        for component in components {
            switch component {
            case let .data(data):
                data.withUnsafeBytes(record)
            case .port:
                portDescriptors[portsWritten].withUnsafeBytes(record)
                portsWritten += 1
            }
        }
        replyDescriptor?.withUnsafeBytes(record)
        return offset
    }

    /// Walks the records of a packed frame (`bytes` is the whole frame):
    /// calls `body` with each record's index and bytes, in order. Throws if
    /// a length runs past the frame's end or bytes are left after the last.
    static func readPackedRecords(
        _ bytes: UnsafeRawBufferPointer, header: Header,
        _ body: (Int, UnsafeRawBufferPointer) throws(DecodeError) -> Void
    ) throws(DecodeError) {
        var offset = header.size
        for index in 0..<header.recordCount {
            guard bytes.count - offset >= recordLengthSize else {
                throw .badPackedRecords("the frame ends before the length of record \(index)")
            }
            let length = Int(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
            offset += recordLengthSize
            guard bytes.count - offset >= length else {
                throw .badPackedRecords("record \(index) announces \(length) bytes, \(bytes.count - offset) are left")
            }
            try body(index, UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]))
            offset += length
        }
        guard offset == bytes.count else {
            throw .badPackedRecords("\(bytes.count - offset) bytes after the last record")
        }
    }

    // MARK: - Port descriptors

    /// Layout (docs/wire-format.md): magic "RLKD", version, transport
    /// (0 inproc only, 1 ipc), ipc path length, pid, process start time,
    /// port id, then the path bytes.
    static func encodeDescriptor(_ address: PortAddress) -> [UInt8] {
        let path = Array((address.ipcPath ?? "").utf8)
        var bytes = [UInt8](repeating: 0, count: descriptorFixedSize + path.count)
        bytes.withUnsafeMutableBytes { buffer in
            buffer[0] = descriptorMagic.0
            buffer[1] = descriptorMagic.1
            buffer[2] = descriptorMagic.2
            buffer[3] = descriptorMagic.3
            buffer[4] = version
            buffer[5] = address.ipcPath == nil ? 0 : 1
            buffer.storeBytes(of: UInt16(path.count).littleEndian, toByteOffset: 6, as: UInt16.self)
            buffer.storeBytes(of: UInt32(bitPattern: address.pid).littleEndian, toByteOffset: 8, as: UInt32.self)
            buffer.storeBytes(of: address.startTime.littleEndian, toByteOffset: 12, as: UInt64.self)
            buffer.storeBytes(of: address.portID.littleEndian, toByteOffset: 20, as: UInt64.self)
            for (index, byte) in path.enumerated() { buffer[descriptorFixedSize + index] = byte }
        }
        return bytes
    }

    static func decodeDescriptor(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> PortAddress {
        guard bytes.count >= descriptorFixedSize else { throw .badDescriptor("\(bytes.count) bytes, under \(descriptorFixedSize)") }
        guard bytes[0] == descriptorMagic.0, bytes[1] == descriptorMagic.1, bytes[2] == descriptorMagic.2, bytes[3] == descriptorMagic.3 else {
            throw .badDescriptor("bad magic")
        }
        guard bytes[4] == version else { throw .badDescriptor("unsupported version \(bytes[4])") }
        let transport = bytes[5]
        let pathLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        guard bytes.count == descriptorFixedSize + pathLength else {
            throw .badDescriptor("path length \(pathLength) does not match the frame's \(bytes.count) bytes")
        }
        let pid = Int32(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
        let startTime = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 12, as: UInt64.self))
        let portID = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 20, as: UInt64.self))
        var ipcPath: String?
        switch transport {
        case 0:
            guard pathLength == 0 else { throw .badDescriptor("an inproc descriptor with a path") }
        case 1:
            guard pathLength > 0, pathLength <= maxIPCPathBytes else {
                throw .badDescriptor("ipc path of \(pathLength) bytes (1 to \(maxIPCPathBytes) allowed)")
            }
            let pathBytes = UnsafeRawBufferPointer(rebasing: bytes[descriptorFixedSize...])
            guard let path = String(validating: pathBytes, as: UTF8.self), path.hasPrefix("/"), !path.contains("\0") else {
                throw .badDescriptor("ipc path is not an absolute UTF-8 path")
            }
            ipcPath = path
        default:
            throw .badDescriptor("unknown transport \(transport)")
        }
        guard pid > 0 else { throw .badDescriptor("pid \(pid)") }
        return PortAddress(pid: pid, startTime: startTime, portID: portID, ipcPath: ipcPath)
    }
}
