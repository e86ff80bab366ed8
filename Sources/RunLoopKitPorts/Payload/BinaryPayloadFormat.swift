@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The binary encoding of a typed payload's body (encoding 0;
/// docs/wire-format.md, "Typed payloads"): a value is a tag byte and what
/// that tag says follows. Numbers are LEB128 varints (signed ones
/// zig-zagged) or little-endian IEEE 754; strings UTF-8 with their byte
/// count first; keyed containers their entry count, then each key (a
/// string without a tag) and value, in the order they were encoded.
package enum BinaryPayloadFormat {
    static let tagNull: UInt8 = 0x00
    static let tagFalse: UInt8 = 0x01
    static let tagTrue: UInt8 = 0x02
    static let tagInt: UInt8 = 0x03
    static let tagUInt: UInt8 = 0x04
    static let tagFloat: UInt8 = 0x05
    static let tagDouble: UInt8 = 0x06
    static let tagString: UInt8 = 0x07
    static let tagBytes: UInt8 = 0x08
    static let tagArray: UInt8 = 0x09
    static let tagKeyed: UInt8 = 0x0A
    static let tagPort: UInt8 = 0x0B

    /// Containers nest at most this deep: a reader's recursion is bounded
    /// whatever the bytes say.
    package static let maxDepth = 128

    // MARK: - Writing

    package static func write(_ value: PayloadValue, into bytes: inout [UInt8]) {
        switch value {
        case .null: bytes.append(tagNull)
        case let .bool(flag): bytes.append(flag ? tagTrue : tagFalse)
        case let .int(number):
            bytes.append(tagInt)
            writeVarint(UInt64(bitPattern: (number << 1) ^ (number >> 63)), into: &bytes)
        case let .uint(number):
            bytes.append(tagUInt)
            writeVarint(number, into: &bytes)
        case let .float(number):
            bytes.append(tagFloat)
            withUnsafeBytes(of: number.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        case let .double(number):
            bytes.append(tagDouble)
            withUnsafeBytes(of: number.bitPattern.littleEndian) { bytes.append(contentsOf: $0) }
        case let .string(text):
            bytes.append(tagString)
            writeString(text, into: &bytes)
        case let .bytes(data):
            bytes.append(tagBytes)
            writeVarint(UInt64(data.count), into: &bytes)
            bytes.append(contentsOf: data)
        case let .array(elements):
            bytes.append(tagArray)
            writeVarint(UInt64(elements.count), into: &bytes)
            for element in elements { write(element, into: &bytes) }
        case let .keyed(entries):
            bytes.append(tagKeyed)
            writeVarint(UInt64(entries.count), into: &bytes)
            for entry in entries {
                writeString(entry.key, into: &bytes)
                write(entry.value, into: &bytes)
            }
        case let .port(index):
            bytes.append(tagPort)
            writeVarint(UInt64(index), into: &bytes)
        }
    }

    private static func writeString(_ text: String, into bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { utf8 in
            writeVarint(UInt64(utf8.count), into: &bytes)
            bytes.append(contentsOf: utf8)
        }
    }

    private static func writeVarint(_ value: UInt64, into bytes: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    // MARK: - Reading

    /// Reads one value that takes all of `bytes`; anything else is
    /// `.malformed`, with where and why.
    package static func read(_ bytes: UnsafeRawBufferPointer) throws(PayloadError) -> PayloadValue {
        var reader = Reader(bytes: bytes)
        let value = try reader.value(depth: 0)
        guard reader.offset == bytes.count else {
            throw .malformed("\(bytes.count - reader.offset) bytes after the value, at byte \(reader.offset)")
        }
        return value
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func value(depth: Int) throws(PayloadError) -> PayloadValue {
            let at = offset
            let tag = try byte()
            switch tag {
            case tagNull: return .null
            case tagFalse: return .bool(false)
            case tagTrue: return .bool(true)
            case tagInt:
                let zigzag = try varint()
                return .int(Int64(bitPattern: zigzag >> 1) ^ -Int64(bitPattern: zigzag & 1))
            case tagUInt: return .uint(try varint())
            case tagFloat: return .float(Float(bitPattern: UInt32(littleEndian: try fixed(UInt32.self))))
            case tagDouble: return .double(Double(bitPattern: UInt64(littleEndian: try fixed(UInt64.self))))
            case tagString: return .string(try string())
            case tagBytes:
                let count = try count(atLeast: 1)
                defer { offset += count }
                return .bytes(Data(UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count])))
            case tagArray:
                guard depth < maxDepth else { throw .malformed("containers nested over \(maxDepth) deep, at byte \(at)") }
                let count = try count(atLeast: 1)
                var elements: [PayloadValue] = []
                elements.reserveCapacity(count)
                for _ in 0..<count { elements.append(try value(depth: depth + 1)) }
                return .array(elements)
            case tagKeyed:
                guard depth < maxDepth else { throw .malformed("containers nested over \(maxDepth) deep, at byte \(at)") }
                let count = try count(atLeast: 2)
                var entries: [PayloadValue.Entry] = []
                entries.reserveCapacity(count)
                // Keys seen, looked along while few, hashed once many.
                var seen: Set<String>?
                for _ in 0..<count {
                    let keyAt = offset
                    let key = try string()
                    let twice: Bool
                    if seen != nil {
                        twice = !seen!.insert(key).inserted
                    } else {
                        twice = entries.contains { $0.key == key }
                        if entries.count == 16 { seen = Set(entries.map(\.key) + [key]) }
                    }
                    guard !twice else { throw .malformed("the key \"\(key)\" twice in one container, at byte \(keyAt)") }
                    entries.append(PayloadValue.Entry(key, try value(depth: depth + 1)))
                }
                return .keyed(entries)
            case tagPort:
                let index = try varint()
                guard index <= UInt64(WireFormat.maxComponents) else { throw .malformed("port index \(index), over the component limit, at byte \(at)") }
                return .port(Int(index))
            default:
                throw .malformed("unknown tag 0x\(String(tag, radix: 16)) at byte \(at)")
            }
        }

        mutating func byte() throws(PayloadError) -> UInt8 {
            guard offset < bytes.count else { throw .malformed("cut short at byte \(offset)") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func fixed<T: FixedWidthInteger>(_: T.Type) throws(PayloadError) -> T {
            guard bytes.count - offset >= MemoryLayout<T>.size else { throw .malformed("cut short at byte \(offset)") }
            defer { offset += MemoryLayout<T>.size }
            return bytes.loadUnaligned(fromByteOffset: offset, as: T.self)
        }

        mutating func varint() throws(PayloadError) -> UInt64 {
            let at = offset
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                let byte = try byte()
                // The tenth byte holds the top bit only.
                guard shift < 63 || byte <= 1 else { throw .malformed("a number over 64 bits at byte \(at)") }
                value |= UInt64(byte & 0x7F) << shift
                if byte & 0x80 == 0 { return value }
                shift += 7
            }
        }

        /// A count or length, each of whose items takes at least
        /// `atLeast` bytes: one the rest of the bytes cannot hold is
        /// refused before anything is reserved for it.
        mutating func count(atLeast: Int) throws(PayloadError) -> Int {
            let at = offset
            let count = try varint()
            guard count <= UInt64(bytes.count - offset) / UInt64(atLeast) else {
                throw .malformed("a count of \(count) at byte \(at), more than the \(bytes.count - offset) bytes left can hold")
            }
            return Int(count)
        }

        mutating func string() throws(PayloadError) -> String {
            let at = offset
            let count = try count(atLeast: 1)
            defer { offset += count }
            guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[offset..<offset + count]), as: UTF8.self) else {
                throw .malformed("a string that is not UTF-8 at byte \(at)")
            }
            return text
        }
    }
}
