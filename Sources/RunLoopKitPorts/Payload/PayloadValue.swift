@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A typed payload's body as a tree, between a Swift value and its bytes
/// (docs/wire-format.md, "Typed payloads"): what `PayloadEncoder` makes of
/// a value and `PayloadDecoder` reads back, and what both encodings (binary
/// and JSON) write and read. Keyed entries keep the order they were
/// encoded in, so that a value encodes to the same bytes every time
/// wherever its `Codable` conformance encodes in a fixed order.
package enum PayloadValue: Equatable, Sendable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case float(Float)
    case double(Double)
    case string(String)
    case bytes(Data)
    case array([PayloadValue])
    case keyed([Entry])
    /// A port: the index of a port component of the message (0 is the
    /// component after the payload's).
    case port(Int)

    package struct Entry: Equatable, Sendable {
        package var key: String
        package var value: PayloadValue

        package init(_ key: String, _ value: PayloadValue) {
            self.key = key
            self.value = value
        }
    }

    /// How a value's kind reads in an error: "an int", "a keyed container".
    var kindDescription: String {
        switch self {
        case .null: "null"
        case .bool: "a bool"
        case .int: "an int"
        case .uint: "an unsigned int"
        case .float: "a float"
        case .double: "a double"
        case .string: "a string"
        case .bytes: "bytes"
        case .array: "an array"
        case .keyed: "a keyed container"
        case .port: "a port"
        }
    }

    /// NaN equals NaN here: a tree that read back as it was written is equal.
    package static func == (lhs: PayloadValue, rhs: PayloadValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.int(a), .int(b)): a == b
        case let (.uint(a), .uint(b)): a == b
        case let (.float(a), .float(b)): a.bitPattern == b.bitPattern || a == b
        case let (.double(a), .double(b)): a.bitPattern == b.bitPattern || a == b
        case let (.string(a), .string(b)): a == b
        case let (.bytes(a), .bytes(b)): a == b
        case let (.array(a), .array(b)): a == b
        case let (.keyed(a), .keyed(b)): a == b
        case let (.port(a), .port(b)): a == b
        default: false
        }
    }
}
