import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The one home of the wire format (docs/wire-format.md): nothing outside
/// Wire/ knows a byte offset. This file holds the constants and limits;
/// the header, the packed form, port descriptors and name files are in the
/// `WireFormat+…` files beside it, and `MessageEncoder` / `MessageDecoder`
/// turn a PortMessage into frames and back.
///
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
    /// Either form with an extension area after the header's fixed fields:
    /// what goes over tcp, whose destination travels there
    /// (docs/wire-format.md, "Version 3").
    static let extendedVersion: UInt8 = 3
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
    /// A version-2 descriptor: version 1's fixed part and a 16-byte host id.
    static let descriptorV2FixedSize = 44
    /// Port descriptors carry their own version: 1 (no host), or 2 (an ipc
    /// port with its host's id, S-PORT-8).
    static let descriptorVersionWithHost: UInt8 = 2
    /// Version 3: a tcp port, named by its process's instance (S-NET-1).
    static let descriptorVersionTCP: UInt8 = 3
    /// Version 3's fixed part: version 1's, the instance (16), the
    /// security byte and the server's public key (32).
    static let descriptorV3FixedSize = 77
    /// Version 4: a tcp port of the process at the other end of the
    /// connection the message came over, its endpoint named by its
    /// position in that process's home frame (`TCPHome`).
    static let descriptorVersionRelative: UInt8 = 4
    static let relativeDescriptorSize = 16
    /// A version-4 descriptor's endpoint position for a port whose
    /// process listens nowhere.
    static let noListener: UInt8 = 255

    static let flagHasReplyPort: UInt8 = 1 << 0
    /// Set while the traffic tap is on: 8 bytes of trace id follow the
    /// kinds, so that the sniffer can pair each send with its delivery.
    static let flagHasTraceID: UInt8 = 1 << 1
    static let knownFlags: UInt8 = flagHasReplyPort | flagHasTraceID
    /// Version 3 only: the components follow in frames of their own (the
    /// multipart form); clear, they follow in the header's frame (packed).
    static let flagMultipart: UInt8 = 1 << 2
    static let traceIDSize = 8
    /// Version 3: the extension area's length, before its fields.
    static let extensionLengthSize = 4
    /// Each field of the extension area starts with its type and length.
    static let extensionFieldHeaderSize = 4
    /// The largest extension area a receiver accepts.
    static let maxExtensionBytes = 4096
    /// Field 1: the destination's process instance (16 bytes) and port id (8).
    static let fieldDestination: UInt16 = 1
    static let destinationFieldSize = 24
    /// Field 2: W3C traceparent, binary: version (0), trace id (16 bytes),
    /// parent id (8), flags (1), each in the order its hex digits give.
    static let fieldTraceParent: UInt16 = 2
    static let traceParentFieldSize = 26
    /// Field 3: W3C tracestate, its UTF-8 text (1 to 512 bytes); only
    /// beside field 2.
    static let fieldTraceState: UInt16 = 3

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
        case badExtension(String)

        var description: String {
            switch self {
            case let .shortFrame(what): "truncated \(what)"
            case .badMagic: "not a RunLoopKit message (bad magic)"
            case let .unsupportedVersion(version): "unsupported wire version \(version) (this side speaks \(WireFormat.version) to \(WireFormat.extendedVersion), and \(WireFormat.compactVersion) over tcp)"
            case let .unknownFlags(flags): "unknown header flags 0x\(String(flags, radix: 16))"
            case let .unknownComponentKind(kind): "unknown component kind \(kind)"
            case let .tooManyComponents(count): "\(count) components, over the limit of \(WireFormat.maxComponents)"
            case let .frameCountMismatch(expected, got): "header announces \(expected) frames, message has \(got)"
            case let .frameTooLarge(size): "a frame of \(size) bytes, over the limit of \(WireFormat.maxFrameBytes)"
            case let .badPackedRecords(reason): "packed message: \(reason)"
            case let .messageTooLarge(size): "\(size) bytes in all, over the limit of \(WireFormat.maxMessageBytes)"
            case let .badDescriptor(reason): "bad port descriptor: \(reason)"
            case let .badExtension(reason): "bad extension area: \(reason)"
            }
        }
    }
}
