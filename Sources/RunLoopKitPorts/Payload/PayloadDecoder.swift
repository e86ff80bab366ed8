@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Reads a `Decodable` value out of a `PayloadValue` tree, its ports out of
/// the message's port components: a port comes back as the port component
/// itself, so this process's own port is the same object it sent
/// (S-PORT-3), which no `init(from:)` could give.
///
/// Numbers convert where nothing is lost: an integer of any width from
/// either integer kind when it fits, a float from any number, an integer
/// from a double that is a whole number (JSON writes none, but a foreign
/// writer may). Anything else is Swift's `DecodingError`, which the
/// payload's API reports as `PayloadError.valueDoesNotFit`.
package struct PayloadDecoder {
    /// The tree's value as a `T`; `userInfo` is what its `init(from:)`
    /// finds in `decoder.userInfo` (a distributed actor system, say).
    package static func decode<T: Decodable>(
        _ type: T.Type, from value: PayloadValue, ports: [Port], userInfo: [CodingUserInfoKey: any Sendable] = [:]
    ) throws(PayloadError) -> T {
        do {
            return try unbox(T.self, from: value, ports: Ports(ports: ports, userInfo: userInfo), codingPath: [])
        } catch let error as DecodingError {
            throw PayloadError.decoding(error)
        } catch let error as PayloadError {
            throw error
        } catch {
            throw PayloadError.valueDoesNotFit(path: "", reason: "its init(from:) threw \(error)")
        }
    }

    /// What every container of one decoding shares: the message's port
    /// components, and the user info.
    struct Ports {
        let ports: [Port]
        let userInfo: [CodingUserInfoKey: any Sendable]
    }

    static func unbox<T: Decodable>(_ type: T.Type, from value: PayloadValue, ports: Ports, codingPath: [any CodingKey]) throws -> T {
        if T.self == Port.self {
            guard case let .port(index) = value else { throw mismatch(T.self, value, codingPath) }
            guard index < ports.ports.count else {
                throw PayloadError.malformed("port index \(index) at \(PayloadError.path(codingPath)), but the message has \(ports.ports.count) port components")
            }
            return ports.ports[index] as! T
        }
        if T.self == Data.self {
            guard case let .bytes(data) = value else { throw mismatch(T.self, value, codingPath) }
            return data as! T
        }
        return try T(from: Core(value: value, ports: ports, codingPath: codingPath))
    }

    static func mismatch(_ type: Any.Type, _ value: PayloadValue, _ codingPath: [any CodingKey]) -> DecodingError {
        .typeMismatch(type, DecodingError.Context(codingPath: codingPath, debugDescription: "expected \(type), found \(value.kindDescription)"))
    }

    // MARK: - Scalars

    static func bool(_ value: PayloadValue, _ codingPath: [any CodingKey]) throws -> Bool {
        guard case let .bool(flag) = value else { throw mismatch(Bool.self, value, codingPath) }
        return flag
    }

    static func string(_ value: PayloadValue, _ codingPath: [any CodingKey]) throws -> String {
        guard case let .string(text) = value else { throw mismatch(String.self, value, codingPath) }
        return text
    }

    static func integer<I: FixedWidthInteger>(_ type: I.Type, _ value: PayloadValue, _ codingPath: [any CodingKey]) throws -> I {
        let converted: I?
        switch value {
        case let .int(number): converted = I(exactly: number)
        case let .uint(number): converted = I(exactly: number)
        case let .double(number): converted = I(exactly: number)
        default: throw mismatch(I.self, value, codingPath)
        }
        guard let converted else {
            throw DecodingError.dataCorrupted(DecodingError.Context(codingPath: codingPath, debugDescription: "\(value) does not fit \(I.self)"))
        }
        return converted
    }

    static func double(_ value: PayloadValue, _ codingPath: [any CodingKey]) throws -> Double {
        switch value {
        case let .double(number): return number
        case let .float(number): return Double(number)
        case let .int(number): return Double(number)
        case let .uint(number): return Double(number)
        // How the JSON encoding writes what JSON cannot.
        case .string("NaN"): return .nan
        case .string("Infinity"): return .infinity
        case .string("-Infinity"): return -.infinity
        default: throw mismatch(Double.self, value, codingPath)
        }
    }

    static func float(_ value: PayloadValue, _ codingPath: [any CodingKey]) throws -> Float {
        if case let .float(number) = value { return number }
        return Float(try double(value, codingPath))
    }

    // MARK: - Containers

    /// The `Decoder` a value decodes itself from.
    struct Core: Decoder {
        let value: PayloadValue
        let ports: Ports
        let codingPath: [any CodingKey]
        var userInfo: [CodingUserInfoKey: Any] { ports.userInfo }

        func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
            guard case let .keyed(entries) = value else { throw PayloadDecoder.mismatch([String: Any].self, value, codingPath) }
            return KeyedDecodingContainer(Keyed<Key>(entries: entries, ports: ports, codingPath: codingPath))
        }

        func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
            guard case let .array(elements) = value else { throw PayloadDecoder.mismatch([Any].self, value, codingPath) }
            return Unkeyed(elements: elements, ports: ports, codingPath: codingPath)
        }

        func singleValueContainer() throws -> any SingleValueDecodingContainer {
            Single(value: value, ports: ports, codingPath: codingPath)
        }
    }

    struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let ports: Ports
        let codingPath: [any CodingKey]
        private let entries: [PayloadValue.Entry]
        /// Where each key is, for a container with more keys than a look
        /// along them is worth (a large `Dictionary`). Readers refuse a
        /// key twice, so every key is here once.
        private let index: [String: Int]?

        init(entries: [PayloadValue.Entry], ports: Ports, codingPath: [any CodingKey]) {
            self.ports = ports
            self.codingPath = codingPath
            self.entries = entries
            index = entries.count > 16
                ? Dictionary(entries.enumerated().map { ($1.key, $0) }, uniquingKeysWith: { first, _ in first }) : nil
        }

        var allKeys: [Key] { entries.compactMap { Key(stringValue: $0.key) } }

        private func find(_ key: String) -> PayloadValue? {
            if let index { return index[key].map { entries[$0].value } }
            for entry in entries where entry.key == key { return entry.value }
            return nil
        }

        func contains(_ key: Key) -> Bool { find(key.stringValue) != nil }

        private func value(_ key: Key) throws -> PayloadValue {
            guard let value = find(key.stringValue) else {
                throw DecodingError.keyNotFound(key, DecodingError.Context(codingPath: codingPath, debugDescription: "no value for the key \"\(key.stringValue)\""))
            }
            return value
        }

        func decodeNil(forKey key: Key) throws -> Bool { try value(key) == .null }
        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try PayloadDecoder.bool(value(key), codingPath + [key]) }
        func decode(_ type: String.Type, forKey key: Key) throws -> String { try PayloadDecoder.string(value(key), codingPath + [key]) }
        func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try PayloadDecoder.double(value(key), codingPath + [key]) }
        func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try PayloadDecoder.float(value(key), codingPath + [key]) }
        func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try PayloadDecoder.integer(type, value(key), codingPath + [key]) }
        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            try PayloadDecoder.unbox(type, from: value(key), ports: ports, codingPath: codingPath + [key])
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            try Core(value: value(key), ports: ports, codingPath: codingPath + [key]).container(keyedBy: type)
        }

        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
            try Core(value: value(key), ports: ports, codingPath: codingPath + [key]).unkeyedContainer()
        }

        func superDecoder() throws -> any Decoder {
            Core(value: find("super") ?? .null, ports: ports, codingPath: codingPath + [PayloadKey("super")])
        }

        func superDecoder(forKey key: Key) throws -> any Decoder {
            Core(value: find(key.stringValue) ?? .null, ports: ports, codingPath: codingPath + [key])
        }
    }

    struct Unkeyed: UnkeyedDecodingContainer {
        let elements: [PayloadValue]
        let ports: Ports
        let codingPath: [any CodingKey]
        var currentIndex = 0
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        init(elements: [PayloadValue], ports: Ports, codingPath: [any CodingKey]) {
            self.elements = elements
            self.ports = ports
            self.codingPath = codingPath
        }

        private var path: [any CodingKey] { codingPath + [PayloadKey(index: currentIndex)] }

        /// The next element, taken.
        private mutating func next(_ type: Any.Type) throws -> PayloadValue {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(type, DecodingError.Context(codingPath: path, debugDescription: "the array has \(elements.count) elements"))
            }
            defer { currentIndex += 1 }
            return elements[currentIndex]
        }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, elements[currentIndex] == .null else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode(_ type: Bool.Type) throws -> Bool { let at = path; return try PayloadDecoder.bool(next(type), at) }
        mutating func decode(_ type: String.Type) throws -> String { let at = path; return try PayloadDecoder.string(next(type), at) }
        mutating func decode(_ type: Double.Type) throws -> Double { let at = path; return try PayloadDecoder.double(next(type), at) }
        mutating func decode(_ type: Float.Type) throws -> Float { let at = path; return try PayloadDecoder.float(next(type), at) }
        mutating func decode(_ type: Int.Type) throws -> Int { try integer(type) }
        mutating func decode(_ type: Int8.Type) throws -> Int8 { try integer(type) }
        mutating func decode(_ type: Int16.Type) throws -> Int16 { try integer(type) }
        mutating func decode(_ type: Int32.Type) throws -> Int32 { try integer(type) }
        mutating func decode(_ type: Int64.Type) throws -> Int64 { try integer(type) }
        mutating func decode(_ type: UInt.Type) throws -> UInt { try integer(type) }
        mutating func decode(_ type: UInt8.Type) throws -> UInt8 { try integer(type) }
        mutating func decode(_ type: UInt16.Type) throws -> UInt16 { try integer(type) }
        mutating func decode(_ type: UInt32.Type) throws -> UInt32 { try integer(type) }
        mutating func decode(_ type: UInt64.Type) throws -> UInt64 { try integer(type) }
        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            let at = path
            return try PayloadDecoder.unbox(type, from: next(type), ports: ports, codingPath: at)
        }

        private mutating func integer<I: FixedWidthInteger>(_ type: I.Type) throws -> I {
            let at = path
            return try PayloadDecoder.integer(type, next(type), at)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
            let at = path
            return try Core(value: next([String: Any].self), ports: ports, codingPath: at).container(keyedBy: type)
        }

        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
            let at = path
            return try Core(value: next([Any].self), ports: ports, codingPath: at).unkeyedContainer()
        }

        mutating func superDecoder() throws -> any Decoder {
            let at = path
            return Core(value: try next(Any.self), ports: ports, codingPath: at)
        }
    }

    struct Single: SingleValueDecodingContainer {
        let value: PayloadValue
        let ports: Ports
        let codingPath: [any CodingKey]

        func decodeNil() -> Bool { value == .null }
        func decode(_ type: Bool.Type) throws -> Bool { try PayloadDecoder.bool(value, codingPath) }
        func decode(_ type: String.Type) throws -> String { try PayloadDecoder.string(value, codingPath) }
        func decode(_ type: Double.Type) throws -> Double { try PayloadDecoder.double(value, codingPath) }
        func decode(_ type: Float.Type) throws -> Float { try PayloadDecoder.float(value, codingPath) }
        func decode(_ type: Int.Type) throws -> Int { try PayloadDecoder.integer(type, value, codingPath) }
        func decode(_ type: Int8.Type) throws -> Int8 { try PayloadDecoder.integer(type, value, codingPath) }
        func decode(_ type: Int16.Type) throws -> Int16 { try PayloadDecoder.integer(type, value, codingPath) }
        func decode(_ type: Int32.Type) throws -> Int32 { try PayloadDecoder.integer(type, value, codingPath) }
        func decode(_ type: Int64.Type) throws -> Int64 { try PayloadDecoder.integer(type, value, codingPath) }
        func decode(_ type: UInt.Type) throws -> UInt { try PayloadDecoder.integer(type, value, codingPath) }
        func decode(_ type: UInt8.Type) throws -> UInt8 { try PayloadDecoder.integer(type, value, codingPath) }
        func decode(_ type: UInt16.Type) throws -> UInt16 { try PayloadDecoder.integer(type, value, codingPath) }
        func decode(_ type: UInt32.Type) throws -> UInt32 { try PayloadDecoder.integer(type, value, codingPath) }
        func decode(_ type: UInt64.Type) throws -> UInt64 { try PayloadDecoder.integer(type, value, codingPath) }
        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            try PayloadDecoder.unbox(type, from: value, ports: ports, codingPath: codingPath)
        }
    }
}
