@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Makes a `PayloadValue` tree of an `Encodable` value, and the ports in
/// it a list of port components (as NSPortCoder encoded ports: by
/// reference, never as bytes). `Data` is bytes, not an array of numbers.
///
/// Containers are nodes filled in as the value encodes itself: a nested
/// container handed out early may be written to after its parent's later
/// keys, so the tree is made whole only at the end (`PayloadNode.value`).
package struct PayloadEncoder {
    /// What the whole encoding shares: the ports met so far (one context
    /// can serve several values that travel in one message).
    package final class Context {
        package private(set) var ports: [Port] = []

        package init() {}

        func index(of port: Port) -> Int {
            if let index = ports.firstIndex(where: { $0 === port }) { return index }
            ports.append(port)
            return ports.count - 1
        }
    }

    /// The tree of `value`, and the ports it holds, in the order of their indices.
    static func encode<T: Encodable>(_ value: T) throws(PayloadError) -> (PayloadValue, [Port]) {
        let context = Context()
        return (try tree(of: value, context: context), context.ports)
    }

    /// The tree of `value`, its ports added to `context`'s.
    package static func tree<T: Encodable>(of value: T, context: Context) throws(PayloadError) -> PayloadValue {
        do {
            return try box(value, context: context, codingPath: []).value
        } catch let error as EncodingError {
            throw PayloadError.encoding(error)
        } catch let error as PayloadError {
            throw error
        } catch {
            throw PayloadError.valueNotEncodable(path: "", reason: "its encode(to:) threw \(error)")
        }
    }

    /// The node of one value: a port or bytes as such, else what the value
    /// encodes itself as.
    static func box<T: Encodable>(_ value: T, context: Context, codingPath: [any CodingKey]) throws -> PayloadNode {
        let node = PayloadNode()
        try fill(node, with: value, context: context, codingPath: codingPath)
        return node
    }

    /// An entry of a container: a port, bytes or a value that encodes
    /// itself as one scalar, as the value; anything else as a node. The
    /// coding path grows only for a value that encodes itself.
    static func child<T: Encodable>(_ value: T, context: Context, codingPath: [any CodingKey], key: any CodingKey) throws -> PayloadNode.Child {
        if let port = value as? Port { return .value(.port(context.index(of: port))) }
        if let data = value as? Data { return .value(.bytes(data)) }
        let node = PayloadNode()
        try value.encode(to: Core(node: node, context: context, codingPath: codingPath + [key]))
        if case let .value(scalar) = node.content { return .value(scalar) }
        return .node(node)
    }

    static func fill<T: Encodable>(_ node: PayloadNode, with value: T, context: Context, codingPath: [any CodingKey]) throws {
        if let port = value as? Port {
            node.content = .value(.port(context.index(of: port)))
        } else if let data = value as? Data {
            node.content = .value(.bytes(data))
        } else {
            try value.encode(to: Core(node: node, context: context, codingPath: codingPath))
        }
    }

    /// The `Encoder` a value encodes itself into.
    struct Core: Encoder {
        let node: PayloadNode
        let context: Context
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { [:] }

        func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
            KeyedEncodingContainer(Keyed<Key>(node: node.asKeyed(), context: context, codingPath: codingPath))
        }

        func unkeyedContainer() -> any UnkeyedEncodingContainer {
            Unkeyed(node: node.asArray(), context: context, codingPath: codingPath)
        }

        func singleValueContainer() -> any SingleValueEncodingContainer { Single(node: node, context: context, codingPath: codingPath) }
    }

    struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let node: PayloadNode
        let context: Context
        let codingPath: [any CodingKey]

        func set(_ value: PayloadValue, _ key: Key) { node.set(.value(value), for: key.stringValue) }

        mutating func encodeNil(forKey key: Key) { set(.null, key) }
        mutating func encode(_ value: Bool, forKey key: Key) { set(.bool(value), key) }
        mutating func encode(_ value: String, forKey key: Key) { set(.string(value), key) }
        mutating func encode(_ value: Double, forKey key: Key) { set(.double(value), key) }
        mutating func encode(_ value: Float, forKey key: Key) { set(.float(value), key) }
        mutating func encode(_ value: Int, forKey key: Key) { set(.int(Int64(value)), key) }
        mutating func encode(_ value: Int8, forKey key: Key) { set(.int(Int64(value)), key) }
        mutating func encode(_ value: Int16, forKey key: Key) { set(.int(Int64(value)), key) }
        mutating func encode(_ value: Int32, forKey key: Key) { set(.int(Int64(value)), key) }
        mutating func encode(_ value: Int64, forKey key: Key) { set(.int(value), key) }
        mutating func encode(_ value: UInt, forKey key: Key) { set(.uint(UInt64(value)), key) }
        mutating func encode(_ value: UInt8, forKey key: Key) { set(.uint(UInt64(value)), key) }
        mutating func encode(_ value: UInt16, forKey key: Key) { set(.uint(UInt64(value)), key) }
        mutating func encode(_ value: UInt32, forKey key: Key) { set(.uint(UInt64(value)), key) }
        mutating func encode(_ value: UInt64, forKey key: Key) { set(.uint(value), key) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            node.set(try PayloadEncoder.child(value, context: context, codingPath: codingPath, key: key), for: key.stringValue)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            let child = PayloadNode()
            node.set(.node(child), for: key.stringValue)
            return KeyedEncodingContainer(Keyed<NestedKey>(node: child.asKeyed(), context: context, codingPath: codingPath + [key]))
        }

        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            let child = PayloadNode()
            node.set(.node(child), for: key.stringValue)
            return Unkeyed(node: child.asArray(), context: context, codingPath: codingPath + [key])
        }

        mutating func superEncoder() -> any Encoder { superEncoder(forKey: "super") }
        mutating func superEncoder(forKey key: Key) -> any Encoder { superEncoder(forKey: key.stringValue) }

        private func superEncoder(forKey key: String) -> any Encoder {
            let child = PayloadNode()
            node.set(.node(child), for: key)
            return Core(node: child, context: context, codingPath: codingPath + [PayloadKey(key)])
        }
    }

    struct Unkeyed: UnkeyedEncodingContainer {
        let node: PayloadNode
        let context: Context
        let codingPath: [any CodingKey]
        var count: Int { node.elements.count }

        private var nextKey: PayloadKey { PayloadKey(index: count) }
        func append(_ value: PayloadValue) { node.elements.append(.value(value)) }

        mutating func encodeNil() { append(.null) }
        mutating func encode(_ value: Bool) { append(.bool(value)) }
        mutating func encode(_ value: String) { append(.string(value)) }
        mutating func encode(_ value: Double) { append(.double(value)) }
        mutating func encode(_ value: Float) { append(.float(value)) }
        mutating func encode(_ value: Int) { append(.int(Int64(value))) }
        mutating func encode(_ value: Int8) { append(.int(Int64(value))) }
        mutating func encode(_ value: Int16) { append(.int(Int64(value))) }
        mutating func encode(_ value: Int32) { append(.int(Int64(value))) }
        mutating func encode(_ value: Int64) { append(.int(value)) }
        mutating func encode(_ value: UInt) { append(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt8) { append(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt16) { append(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt32) { append(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt64) { append(.uint(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            node.elements.append(try PayloadEncoder.child(value, context: context, codingPath: codingPath, key: nextKey))
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            let child = PayloadNode()
            let path = codingPath + [nextKey]
            node.elements.append(.node(child))
            return KeyedEncodingContainer(Keyed<NestedKey>(node: child.asKeyed(), context: context, codingPath: path))
        }

        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            let child = PayloadNode()
            let path = codingPath + [nextKey]
            node.elements.append(.node(child))
            return Unkeyed(node: child.asArray(), context: context, codingPath: path)
        }

        mutating func superEncoder() -> any Encoder {
            let child = PayloadNode()
            let path = codingPath + [nextKey]
            node.elements.append(.node(child))
            return Core(node: child, context: context, codingPath: path)
        }
    }

    struct Single: SingleValueEncodingContainer {
        let node: PayloadNode
        let context: Context
        let codingPath: [any CodingKey]

        mutating func encodeNil() { node.content = .value(.null) }
        mutating func encode(_ value: Bool) { node.content = .value(.bool(value)) }
        mutating func encode(_ value: String) { node.content = .value(.string(value)) }
        mutating func encode(_ value: Double) { node.content = .value(.double(value)) }
        mutating func encode(_ value: Float) { node.content = .value(.float(value)) }
        mutating func encode(_ value: Int) { node.content = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int8) { node.content = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int16) { node.content = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int32) { node.content = .value(.int(Int64(value))) }
        mutating func encode(_ value: Int64) { node.content = .value(.int(value)) }
        mutating func encode(_ value: UInt) { node.content = .value(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt8) { node.content = .value(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt16) { node.content = .value(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt32) { node.content = .value(.uint(UInt64(value))) }
        mutating func encode(_ value: UInt64) { node.content = .value(.uint(value)) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            try PayloadEncoder.fill(node, with: value, context: context, codingPath: codingPath)
        }
    }
}

/// A container being filled in while a value encodes itself. A scalar in
/// it is kept as its value, not as a node of its own: most of a value's
/// entries are scalars, and a node is an allocation.
final class PayloadNode {
    enum Content {
        case unset
        case value(PayloadValue)
        case array
        case keyed
    }

    enum Child {
        case value(PayloadValue)
        case node(PayloadNode)

        var value: PayloadValue {
            switch self {
            case let .value(value): value
            case let .node(node): node.value
            }
        }
    }

    var content: Content
    var elements: [Child] = []
    /// Keys in the order first encoded; a key encoded again keeps its place.
    var keys: [String] = []
    var children: [Child] = []
    /// Where each key is, once a container has more keys than a look
    /// along them is worth (a large `Dictionary`).
    private var index: [String: Int]?
    private static let indexedFrom = 16

    init(_ value: PayloadValue? = nil) { content = value.map { .value($0) } ?? .unset }

    func asKeyed() -> PayloadNode {
        if case .unset = content { content = .keyed }
        return self
    }

    func asArray() -> PayloadNode {
        if case .unset = content { content = .array }
        return self
    }

    func set(_ child: Child, for key: String) {
        if let at = position(of: key) {
            children[at] = child
            return
        }
        keys.append(key)
        children.append(child)
        if index != nil {
            index![key] = keys.count - 1
        } else if keys.count > Self.indexedFrom {
            index = Dictionary(keys.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        }
    }

    private func position(of key: String) -> Int? {
        if let index { return index[key] }
        return keys.firstIndex(of: key)
    }

    /// The finished tree. A value that encoded nothing is an empty keyed
    /// container, as JSONEncoder writes `{}`.
    var value: PayloadValue {
        switch content {
        case let .value(value): value
        case .array: .array(elements.map(\.value))
        case .keyed, .unset: .keyed(zip(keys, children).map { PayloadValue.Entry($0, $1.value) })
        }
    }
}

/// A coding key made here: an unkeyed container's index, or `super`.
struct PayloadKey: CodingKey {
    let stringValue: String
    let intValue: Int?

    init(_ string: String) {
        stringValue = string
        intValue = nil
    }

    init(index: Int) {
        stringValue = "Index \(index)"
        intValue = index
    }

    init?(stringValue: String) { self.init(stringValue) }
    init?(intValue: Int) { self.init(index: intValue) }
}
