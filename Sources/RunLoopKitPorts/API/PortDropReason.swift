/// Why a local port dropped a message instead of delivering it (S-PORT-7;
/// docs/wire-format.md, "What a receiver does with bad input"). Each port
/// counts its drops per reason (`Port.dropCounts`) and logs them, at most
/// one line per reason a second.
public enum PortDropReason: Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The message was whole, but the port had no message handler set.
    case noHandler
    /// The header names a wire version this side does not speak.
    case unsupportedVersion
    /// A frame over 64 MiB, or a message over 256 MiB in all (over inproc;
    /// over ipc libzmq disconnects the peer first, see the docs).
    case oversized
    /// Malformed: a frame, header, record or descriptor cut short.
    case truncated
    /// Malformed: the first frame does not start with RunLoopKit's magic.
    case badMagic
    /// Malformed: header flags this side does not know.
    case unknownFlags
    /// Malformed: a component kind this side does not know.
    case unknownComponentKind
    /// Malformed: more than 256 components.
    case tooManyComponents
    /// Malformed: the header's components do not match the frames sent.
    case frameCountMismatch
    /// Malformed: a packed (version 2) message's records do not add up.
    case badPackedRecords
    /// Malformed: a port descriptor (a component or the reply port) is bad.
    case badDescriptor
    /// Malformed: a version-3 (tcp) message's extension area is bad.
    case badExtension
    /// A tcp message named another process instance as its destination:
    /// it was meant for a process that listened at this address before
    /// (S-NET-1). Counted by the process's tcp endpoint.
    case wrongInstance
    /// A tcp message named a port id that no port of this process has (a
    /// port closed meanwhile). Counted by the process's tcp endpoint.
    case noSuchPort
    /// A typed handler (`Port.setMessageHandler(for:_:)`) got a message
    /// whose payload is another type, or no typed payload at all.
    case wrongPayloadType
    /// A typed handler got a payload in a format version or encoding this
    /// side cannot read.
    case unsupportedPayloadVersion
    /// A typed handler got a payload whose bytes do not read, or whose
    /// value does not fit the type (a key missing, an unknown enum case).
    case undecodablePayload

    /// Whether the message was malformed (as opposed to whole but not
    /// deliverable, or refused for its version or size).
    public var isMalformed: Bool {
        switch self {
        case .noHandler, .unsupportedVersion, .oversized, .wrongInstance, .noSuchPort, .wrongPayloadType, .unsupportedPayloadVersion: false
        default: true
        }
    }

    /// The reason's name, as logs show it.
    public var description: String {
        switch self {
        case .noHandler: "no message handler"
        case .unsupportedVersion: "unsupported wire version"
        case .oversized: "oversized"
        case .truncated: "malformed: truncated"
        case .badMagic: "malformed: bad magic"
        case .unknownFlags: "malformed: unknown flags"
        case .unknownComponentKind: "malformed: unknown component kind"
        case .tooManyComponents: "malformed: too many components"
        case .frameCountMismatch: "malformed: frame count mismatch"
        case .badPackedRecords: "malformed: bad packed records"
        case .badDescriptor: "malformed: bad port descriptor"
        case .badExtension: "malformed: bad extension area"
        case .wrongInstance: "meant for another process instance"
        case .noSuchPort: "no such port"
        case .wrongPayloadType: "payload of another type"
        case .unsupportedPayloadVersion: "unsupported payload version"
        case .undecodablePayload: "undecodable payload"
        }
    }

    /// The reason a decode error drops a message for.
    init(_ error: WireFormat.DecodeError) {
        switch error {
        case .shortFrame: self = .truncated
        case .badMagic: self = .badMagic
        case .unsupportedVersion: self = .unsupportedVersion
        case .unknownFlags: self = .unknownFlags
        case .unknownComponentKind: self = .unknownComponentKind
        case .tooManyComponents: self = .tooManyComponents
        case .frameCountMismatch: self = .frameCountMismatch
        case .frameTooLarge, .messageTooLarge: self = .oversized
        case .badPackedRecords: self = .badPackedRecords
        case .badDescriptor: self = .badDescriptor
        case .badExtension: self = .badExtension
        }
    }

    /// The reason's place in a count array.
    var index: Int { Self.allCases.firstIndex(of: self)! }

    /// The case's name, as metrics label a drop (`noHandler`, `badMagic`).
    package var caseName: String {
        switch self {
        case .noHandler: "noHandler"
        case .unsupportedVersion: "unsupportedVersion"
        case .oversized: "oversized"
        case .truncated: "truncated"
        case .badMagic: "badMagic"
        case .unknownFlags: "unknownFlags"
        case .unknownComponentKind: "unknownComponentKind"
        case .tooManyComponents: "tooManyComponents"
        case .frameCountMismatch: "frameCountMismatch"
        case .badPackedRecords: "badPackedRecords"
        case .badDescriptor: "badDescriptor"
        case .badExtension: "badExtension"
        case .wrongInstance: "wrongInstance"
        case .noSuchPort: "noSuchPort"
        case .wrongPayloadType: "wrongPayloadType"
        case .unsupportedPayloadVersion: "unsupportedPayloadVersion"
        case .undecodablePayload: "undecodablePayload"
        }
    }
}

/// A local port's drops, per reason (`Port.dropCounts`).
public struct PortDropCounts: Sendable, Equatable, CustomStringConvertible {
    let counts: [UInt64]

    init(_ counts: [UInt64]) { self.counts = counts }

    /// The messages dropped for `reason`.
    public subscript(reason: PortDropReason) -> UInt64 { counts[reason.index] }

    /// All drops, whatever the reason.
    public var total: UInt64 { counts.reduce(0, &+) }

    /// The drops of malformed messages, of every kind.
    public var malformed: UInt64 {
        PortDropReason.allCases.filter(\.isMalformed).reduce(0) { $0 &+ self[$1] }
    }

    /// The reasons with at least one drop, and their counts, e.g.
    /// `["no message handler": 2, "oversized": 1]`.
    public var description: String {
        let parts = PortDropReason.allCases.filter { self[$0] > 0 }.map { "\"\($0)\": \(self[$0])" }
        return "[" + (parts.isEmpty ? ":" : parts.joined(separator: ", ")) + "]"
    }
}
