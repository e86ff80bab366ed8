/// Why a typed payload could not be made from a value, or a value from a
/// message (docs/wire-format.md, "Typed payloads"). Bad input is an error,
/// never a crash; on a port with a typed handler it is a drop, counted
/// with its reason (`PortDropReason.wrongPayloadType`,
/// `.unsupportedPayloadVersion`, `.undecodablePayload`).
public enum PayloadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The message carries no typed payload: its first component is not
    /// data starting with the payload's magic (an untyped message, or a
    /// foreign sender's).
    case notAPayload(String)
    /// The payload's format version is one this side cannot read.
    case unsupportedVersion(UInt8)
    /// The payload says an encoding this side does not know.
    case unknownEncoding(UInt8)
    /// The payload holds a value of another type than the one asked for.
    case wrongType(expected: String, found: String)
    /// The payload's bytes do not read as its encoding says: cut short, a
    /// tag or number this side does not know, a limit passed, a port index
    /// with no port component.
    case malformed(String)
    /// The payload read, but its value does not fit the type asked for: a
    /// key missing, a value of another kind, a number out of range, an enum
    /// case this side does not know. `path` is the coding path to it.
    case valueDoesNotFit(path: String, reason: String)
    /// The value cannot be encoded: its `encode(to:)` threw, or it holds
    /// something a payload cannot carry. `path` is the coding path to it.
    case valueNotEncodable(path: String, reason: String)

    /// What went wrong, and where.
    public var description: String {
        switch self {
        case let .notAPayload(reason): "not a typed payload: \(reason)"
        case let .unsupportedVersion(version): "typed payload version \(version), which this side cannot read (it reads \(Payload.version))"
        case let .unknownEncoding(code): "typed payload in encoding \(code), which this side does not know (0 binary, 1 JSON)"
        case let .wrongType(expected, found): "the payload holds a \(found), not a \(expected)"
        case let .malformed(reason): "malformed typed payload: \(reason)"
        case let .valueDoesNotFit(path, reason): "the payload does not fit the type at \(path.isEmpty ? "its top" : path): \(reason)"
        case let .valueNotEncodable(path, reason): "the value cannot be encoded at \(path.isEmpty ? "its top" : path): \(reason)"
        }
    }

    /// The case's name, without its payload.
    package var caseName: String {
        switch self {
        case .notAPayload: "notAPayload"
        case .unsupportedVersion: "unsupportedVersion"
        case .unknownEncoding: "unknownEncoding"
        case .wrongType: "wrongType"
        case .malformed: "malformed"
        case .valueDoesNotFit: "valueDoesNotFit"
        case .valueNotEncodable: "valueNotEncodable"
        }
    }

    /// The reason a port with a typed handler drops such a message for.
    var dropReason: PortDropReason {
        switch self {
        case .notAPayload, .wrongType: .wrongPayloadType
        case .unsupportedVersion, .unknownEncoding: .unsupportedPayloadVersion
        case .malformed, .valueDoesNotFit, .valueNotEncodable: .undecodablePayload
        }
    }

    /// A coding path as errors show it: `jobs[2].owner`.
    static func path(_ codingPath: [any CodingKey]) -> String {
        var text = ""
        for key in codingPath {
            if let index = key.intValue, key.stringValue == "Index \(index)" || key.stringValue == "\(index)" {
                text += "[\(index)]"
            } else {
                text += text.isEmpty ? key.stringValue : "." + key.stringValue
            }
        }
        return text
    }

    /// Swift's decoding error as the case it means here.
    static func decoding(_ error: DecodingError) -> PayloadError {
        switch error {
        case let .typeMismatch(_, context), let .valueNotFound(_, context), let .keyNotFound(_, context), let .dataCorrupted(context):
            .valueDoesNotFit(path: path(context.codingPath), reason: context.debugDescription)
        @unknown default:
            .valueDoesNotFit(path: "", reason: "\(error)")
        }
    }

    /// Swift's encoding error as the case it means here.
    static func encoding(_ error: EncodingError) -> PayloadError {
        switch error {
        case let .invalidValue(_, context):
            .valueNotEncodable(path: path(context.codingPath), reason: context.debugDescription)
        @unknown default:
            .valueNotEncodable(path: "", reason: "\(error)")
        }
    }
}
