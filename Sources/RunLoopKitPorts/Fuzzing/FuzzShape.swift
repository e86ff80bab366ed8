@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What the fuzzer decodes a typed payload into: a type of many shapes
/// (every scalar, optionals, nesting, a dictionary, enums with raw and
/// associated values, bytes, a port), so that the `Decoder` a typed
/// handler uses meets every kind of value in every place.
struct FuzzShape: Decodable {
    enum Kind: String, Decodable { case small, large }
    enum Tagged: Decodable {
        case number(Int)
        case named(name: String, bytes: Data)
        case empty
    }

    var id: Int
    var small: Int8?
    var unsigned: UInt32?
    var text: String?
    var flag: Bool?
    var real: Double?
    var ratio: Float?
    var list: [UInt16]?
    var nested: [FuzzShape]?
    var map: [String: Int64]?
    var kind: Kind?
    var tagged: Tagged?
    var bytes: Data?
    var port: Port?
}
