import Glibc

/// The bytes a PortMessage travels as: one ZeroMQ multipart message made of
/// a header frame, one frame per component and, if there is one, the reply
/// port's descriptor. docs/wire-format.md is the specification; this file
/// must agree with it. All integers are little-endian.
enum WireFormat {
    static let version: UInt8 = 1
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
        case messageTooLarge(Int)
        case badDescriptor(String)

        var description: String {
            switch self {
            case let .shortFrame(what): "truncated \(what)"
            case .badMagic: "not a RunLoopKit message (bad magic)"
            case let .unsupportedVersion(version): "unsupported wire version \(version) (this side speaks \(WireFormat.version))"
            case let .unknownFlags(flags): "unknown header flags 0x\(String(flags, radix: 16))"
            case let .unknownComponentKind(kind): "unknown component kind \(kind)"
            case let .tooManyComponents(count): "\(count) components, over the limit of \(WireFormat.maxComponents)"
            case let .frameCountMismatch(expected, got): "header announces \(expected) frames, message has \(got)"
            case let .frameTooLarge(size): "a frame of \(size) bytes, over the limit of \(WireFormat.maxFrameBytes)"
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
        components: [PortMessage.Component], traceID: UInt64? = nil
    ) -> Int {
        buffer[0] = headerMagic.0
        buffer[1] = headerMagic.1
        buffer[2] = headerMagic.2
        buffer[3] = headerMagic.3
        buffer[4] = version
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
        /// The kinds of a message with a port component; nil when every
        /// component is data, the usual case, which then costs no array.
        let mixedKinds: [UInt8]?
        /// Present when the sender's tap was on.
        let traceID: UInt64?
        var frameCount: Int { 1 + componentCount + (hasReplyPort ? 1 : 0) }

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
        guard bytes[4] == version else { throw .unsupportedVersion(bytes[4]) }
        let flags = bytes[5]
        guard flags & ~knownFlags == 0 else { throw .unknownFlags(flags) }
        let count = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        guard count <= maxComponents else { throw .tooManyComponents(count) }
        let traced = flags & flagHasTraceID != 0
        guard bytes.count == headerSize(componentCount: count, traced: traced) else {
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
                      mixedKinds: mixedKinds, traceID: traceID)
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
