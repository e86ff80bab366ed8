import ZeroMQ
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
    /// The second frame of a hello or welcome: the sender's home (`TCPHome`).
    static let controlHome: UInt8 = 3
    static let helloSize = 38
    static let welcomeSize = 22
    /// The third frame of a hello or welcome, after the home frame: the
    /// newest message version its sender reads (`readsFrame`).
    static let controlReads: UInt8 = 4
    static let readsSize = 7
    /// A home frame's fixed part: magic, version, type, pid, start time, endpoint count.
    static let homeFixedSize = 19
    /// Each endpoint of a home: security, key, text length, then the text.
    static let homeEntryFixedSize = 34
    /// A home lists at most this many endpoints (position 255 means none).
    static let maxHomeListeners = 254

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

    /// What this process sends after its home frame: it reads messages of
    /// version 5 (`compactVersion`), so that its peer may write them.
    static let readsFrame: [UInt8] = controlMagic + [controlVersion, controlReads, compactVersion]

    /// The newest message version a reads frame says its sender reads.
    static func decodeReads(_ bytes: UnsafeRawBufferPointer) throws(DecodeError) -> UInt8 {
        guard isControl(bytes) else { throw .badMagic }
        guard bytes.count == readsSize else { throw .shortFrame("reads frame: \(bytes.count) bytes, not \(readsSize)") }
        guard bytes[4] == controlVersion else { throw .unsupportedVersion(bytes[4]) }
        guard bytes[5] == controlReads else {
            throw .badExtension("a hello's or welcome's third frame is of type \(bytes[5]), not reads (4)")
        }
        return bytes[6]
    }

    /// A home frame (docs/wire-format.md, "Home frames and relative
    /// descriptors"): "RLKC", version 1, type 3, the pid and start time,
    /// the number of endpoints, then each endpoint's security byte, CURVE
    /// key (zeros for plain text), text length and text.
    static func encodeHome(pid: Int32, startTime: UInt64, listeners: [TCPHome.Listener]) -> [UInt8] {
        var bytes = controlMagic + [controlVersion, controlHome]
        withUnsafeBytes(of: UInt32(bitPattern: pid).littleEndian) { bytes += $0 }
        withUnsafeBytes(of: startTime.littleEndian) { bytes += $0 }
        bytes.append(UInt8(listeners.count))
        for listener in listeners {
            bytes.append(listener.serverKey == nil ? TCPTransport.securityPlain : TCPTransport.securityCurve)
            bytes += listener.serverKey?.bytes ?? [UInt8](repeating: 0, count: CurveKey.byteCount)
            let text = Array(listener.endpoint.utf8)
            bytes.append(UInt8(text.count))
            bytes += text
        }
        return bytes
    }

    /// The home in `bytes`, of the process whose hello or welcome named
    /// `instance`. Throws for anything that is not a home frame exactly:
    /// each endpoint as a version-3 descriptor's must be.
    static func decodeHome(_ bytes: UnsafeRawBufferPointer, of instance: ProcessInstance) throws(DecodeError) -> TCPHome {
        guard isControl(bytes) else { throw .badMagic }
        guard bytes.count >= homeFixedSize else { throw .shortFrame("home frame (\(bytes.count) bytes)") }
        guard bytes[4] == controlVersion else { throw .unsupportedVersion(bytes[4]) }
        guard bytes[5] == controlHome else { throw .badExtension("a hello's or welcome's second frame is of type \(bytes[5]), not a home (3)") }
        let pid = Int32(bitPattern: UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt32.self)))
        let startTime = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 10, as: UInt64.self))
        guard pid > 0 else { throw .badDescriptor("home frame: pid \(pid)") }
        let count = Int(bytes[18])
        guard count <= maxHomeListeners else { throw .badDescriptor("home frame: \(count) endpoints, over \(maxHomeListeners)") }
        var listeners: [TCPHome.Listener] = []
        var offset = homeFixedSize
        for index in 0..<count {
            guard bytes.count - offset >= homeEntryFixedSize else { throw .shortFrame("home frame, endpoint \(index)") }
            let length = Int(bytes[offset + 33])
            guard bytes.count - offset - homeEntryFixedSize >= length else { throw .shortFrame("home frame, endpoint \(index)'s text") }
            let textStart = offset + homeEntryFixedSize
            guard let endpoint = try TCPTransport.decodedListener(UnsafeRawBufferPointer(rebasing: bytes[textStart..<(textStart + length)])) else {
                throw .badDescriptor("home frame: endpoint \(index) is empty")
            }
            let key = Array(bytes[(offset + 1)..<(offset + 1 + CurveKey.byteCount)])
            var serverKey: CurveKey?
            switch bytes[offset] {
            case TCPTransport.securityCurve: serverKey = try? CurveKey(bytes: key)
            case TCPTransport.securityPlain:
                guard key.allSatisfy({ $0 == 0 }) else { throw .badDescriptor("home frame: endpoint \(index) has a key with security 0") }
            default: throw .badDescriptor("home frame: endpoint \(index) has unknown security \(bytes[offset])")
            }
            listeners.append(TCPHome.Listener(endpoint: endpoint, serverKey: serverKey))
            offset = textStart + length
        }
        guard offset == bytes.count else { throw .badDescriptor("home frame: \(bytes.count - offset) bytes after its last endpoint") }
        return TCPHome(instance: instance, pid: pid, startTime: startTime, listeners: listeners)
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
