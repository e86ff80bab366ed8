/// The control frames of a tcp connection (docs/wire-format.md, "tcp
/// connections"): the dialling side's hello, which says which instance it
/// is and which it expects to reach, and the listener's welcome, which says
/// which instance answered. They let a connection to an address where
/// another process listens now fail at once, instead of carrying messages
/// that would be dropped as meant for another instance (S-NET-1).
extension WireFormat {
    /// "RLKC": a control frame.
    static let controlMagic: [UInt8] = [0x52, 0x4C, 0x4B, 0x43]
    static let controlVersion: UInt8 = 1
    static let controlHello: UInt8 = 1
    static let controlWelcome: UInt8 = 2
    static let helloSize = 38
    static let welcomeSize = 22

    enum Control: Equatable {
        /// From the dialling side: its own instance, and the one it expects.
        case hello(from: ProcessInstance, expecting: ProcessInstance)
        /// From the listener: the instance that answered.
        case welcome(from: ProcessInstance)
    }

    static func encodeControl(_ control: Control) -> [UInt8] {
        var bytes = controlMagic + [controlVersion]
        switch control {
        case let .hello(from, expecting):
            bytes.append(controlHello)
            bytes += instanceBytes(from) + instanceBytes(expecting)
        case let .welcome(from):
            bytes.append(controlWelcome)
            bytes += instanceBytes(from)
        }
        return bytes
    }

    /// Whether `bytes` starts as a control frame does.
    static func isControl(_ bytes: UnsafeRawBufferPointer) -> Bool {
        bytes.count >= 4 && bytes[0] == controlMagic[0] && bytes[1] == controlMagic[1]
            && bytes[2] == controlMagic[2] && bytes[3] == controlMagic[3]
    }

    static func decodeControl(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> Control {
        guard isControl(bytes) else { throw .badMagic }
        guard bytes.count >= 6 else { throw .shortFrame("control frame (\(bytes.count) bytes)") }
        guard bytes[4] == controlVersion else { throw .unsupportedVersion(bytes[4]) }
        switch bytes[5] {
        case controlHello:
            guard bytes.count == helloSize else { throw .shortFrame("hello: \(bytes.count) bytes, not \(helloSize)") }
            return .hello(from: instance(bytes, at: 6), expecting: instance(bytes, at: 22))
        case controlWelcome:
            guard bytes.count == welcomeSize else { throw .shortFrame("welcome: \(bytes.count) bytes, not \(welcomeSize)") }
            return .welcome(from: instance(bytes, at: 6))
        default:
            throw .badExtension("unknown control frame type \(bytes[5])")
        }
    }

    /// An instance as 16 bytes: its high half, then its low half, each little-endian.
    static func instanceBytes(_ instance: ProcessInstance) -> [UInt8] {
        withUnsafeBytes(of: (instance.high.littleEndian, instance.low.littleEndian)) { Array($0) }
    }

    static func instance(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> ProcessInstance {
        ProcessInstance(high: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)),
                        low: UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt64.self)))
    }
}
