@_spi(RunLoopKitInternals) import RunLoopKitCore

/// How a typed payload's body is written (docs/wire-format.md, "Typed
/// payloads").
public enum PayloadEncoding: UInt8, Sendable, CaseIterable {
    /// Compact and exact: what a payload is unless asked otherwise.
    case binary = 0
    /// JSON text, for reading with the eye (in `portsniff --hex`, say):
    /// larger and slower, read back to the same value.
    case json = 1
}

/// A typed payload: a value's type name and its tree, in the first (data)
/// component of a message, the ports in the value as the components after
/// it (docs/wire-format.md, "Typed payloads"):
///
/// | bytes | field |
/// |---|---|
/// | 4 | magic `RLKV` |
/// | 1 | format version, 1 |
/// | 1 | encoding: 0 binary, 1 JSON |
/// | 2 | the type name's length N, little-endian, at most 1,024 |
/// | N | the type name, UTF-8 |
/// | … | the body: the value, in the encoding |
package enum Payload {
    static let magic: [UInt8] = Array("RLKV".utf8)
    /// The one format version this side writes and reads.
    package static let version: UInt8 = 1
    static let fixedHeaderSize = 8
    static let maxTypeNameBytes = 1_024

    /// The name a payload of `T` carries, and a reader checks: the type's
    /// full name (`String(reflecting:)`, module first), without the
    /// build-specific `(unknown context at $…)` of a private or local type.
    package static func typeName<T>(of type: T.Type) -> String { typeNameAndBytes(of: type).name }

    /// The type's name and its UTF-8, made once a type: String(reflecting:)
    /// demangles, a few tens of thousands of instructions a call.
    private static func typeNameAndBytes<T>(of type: T.Type) -> (name: String, bytes: [UInt8]) {
        let key = ObjectIdentifier(type)
        if let known = typeNames.withLock({ $0[key] }) { return known }
        let name = readableName(of: type)
        let made = (name, Array(name.utf8.prefix(maxTypeNameBytes)))
        typeNames.withLock { $0[key] = made }
        return made
    }

    private static let typeNames = Locked<[ObjectIdentifier: (name: String, bytes: [UInt8])]>([:])

    /// The name of a type known only at run time (an error's dynamic
    /// type), made as `typeName(of:)` makes it; not cached.
    package static func typeName(ofDynamic type: Any.Type) -> String { readableName(of: type) }

    private static func readableName(of type: Any.Type) -> String {
        var name = String(reflecting: type)
        while let start = name.range(of: "(unknown context at $") {
            guard let end = name[start.upperBound...].firstIndex(of: ")") else { break }
            var cut = name.index(after: end)
            if cut < name.endIndex, name[cut] == "." { cut = name.index(after: cut) }
            name.removeSubrange(start.lowerBound..<cut)
        }
        return name
    }

    /// The components a message with `value` as its payload carries: the
    /// payload's bytes, then the value's ports.
    package static func components<T: Encodable>(of value: T, encoding: PayloadEncoding) throws(PayloadError) -> [PortMessage.Component] {
        let (tree, ports) = try PayloadEncoder.encode(value)
        guard ports.count < WireFormat.maxComponents else {
            throw .valueNotEncodable(path: "", reason: "\(ports.count) ports, over the \(WireFormat.maxComponents - 1) a message can carry beside its payload")
        }
        return [.data(Data(bytes(of: tree, typeNameBytes: typeNameAndBytes(of: T.self).bytes, encoding: encoding)))] + ports.map { .port($0) }
    }

    /// A payload's bytes: its header, then the tree in the encoding.
    package static func bytes(of tree: PayloadValue, typeName: String, encoding: PayloadEncoding) -> [UInt8] {
        bytes(of: tree, typeNameBytes: Array(typeName.utf8.prefix(maxTypeNameBytes)), encoding: encoding)
    }

    private static func bytes(of tree: PayloadValue, typeNameBytes name: [UInt8], encoding: PayloadEncoding) -> [UInt8] {
        var bytes = magic + [version, encoding.rawValue]
        bytes.reserveCapacity(fixedHeaderSize + name.count + 64)
        withUnsafeBytes(of: UInt16(name.count).littleEndian) { bytes.append(contentsOf: $0) }
        bytes += name
        switch encoding {
        case .binary:
            BinaryPayloadFormat.write(tree, into: &bytes)
        case .json:
            var text = ""
            JSONPayloadFormat.write(tree, into: &text)
            bytes += Array(text.utf8)
        }
        return bytes
    }

    /// What a payload's header says: its encoding and type name, and
    /// where its body starts.
    package struct Header: Sendable {
        package let encoding: PayloadEncoding
        package let typeName: String
        package let bodyOffset: Int
    }

    package static func readHeader(_ bytes: UnsafeRawBufferPointer) throws(PayloadError) -> Header {
        guard bytes.count >= magic.count, bytes.prefix(magic.count).elementsEqual(magic) else {
            throw .notAPayload(bytes.count < magic.count ? "\(bytes.count) bytes" : "no RLKV magic")
        }
        guard bytes.count >= fixedHeaderSize else { throw .malformed("a header of \(bytes.count) bytes, under \(fixedHeaderSize)") }
        guard bytes[4] == version else { throw .unsupportedVersion(bytes[4]) }
        guard let encoding = PayloadEncoding(rawValue: bytes[5]) else { throw .unknownEncoding(bytes[5]) }
        let nameLength = Int(UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 6, as: UInt16.self)))
        guard nameLength <= maxTypeNameBytes else { throw .malformed("a type name of \(nameLength) bytes, over \(maxTypeNameBytes)") }
        guard bytes.count - fixedHeaderSize >= nameLength else { throw .malformed("the type name is cut short") }
        let nameBytes = UnsafeRawBufferPointer(rebasing: bytes[fixedHeaderSize..<fixedHeaderSize + nameLength])
        guard let name = String(validating: nameBytes, as: UTF8.self) else { throw .malformed("a type name that is not UTF-8") }
        return Header(encoding: encoding, typeName: name, bodyOffset: fixedHeaderSize + nameLength)
    }

    /// A payload's tree, the body read in the header's encoding.
    package static func tree(_ bytes: UnsafeRawBufferPointer, _ header: Header) throws(PayloadError) -> PayloadValue {
        let body = UnsafeRawBufferPointer(rebasing: bytes[header.bodyOffset...])
        return switch header.encoding {
        case .binary: try BinaryPayloadFormat.read(body)
        case .json: try JSONPayloadFormat.read(body)
        }
    }

    /// The value of type `T` that `components` carry as their payload.
    package static func value<T: Decodable>(_ type: T.Type, from components: [PortMessage.Component]) throws(PayloadError) -> T {
        guard case let .data(data)? = components.first else {
            throw .notAPayload(components.isEmpty ? "the message has no components" : "its first component is a port")
        }
        var ports: [Port] = []
        for component in components.dropFirst() {
            guard case let .port(port) = component else { throw .malformed("a data component after the payload: only ports follow it") }
            ports.append(port)
        }
        let expected = typeName(of: T.self)
        let read = data.withUnsafeBytes { bytes in
            Result { () throws(PayloadError) -> PayloadValue in
                let header = try readHeader(bytes)
                guard header.typeName == expected else { throw .wrongType(expected: expected, found: header.typeName) }
                return try tree(bytes, header)
            }
        }
        return try PayloadDecoder.decode(T.self, from: read.get(), ports: ports)
    }
}
