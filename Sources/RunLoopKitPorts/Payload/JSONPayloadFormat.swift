import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The JSON encoding of a typed payload's body (encoding 1, for reading
/// with the eye: docs/wire-format.md, "Typed payloads"). The same tree as
/// the binary encoding: keyed containers are objects in the order their
/// keys were encoded, bytes are `{"$bytes": "<base64>"}`, a port is
/// `{"$port": <index>}`, and a float that JSON cannot write is the string
/// `"NaN"`, `"Infinity"` or `"-Infinity"`. A number without a fraction or
/// an exponent reads as an integer, any other as a double.
package enum JSONPayloadFormat {
    // MARK: - Writing

    package static func write(_ value: PayloadValue, into text: inout String) {
        switch value {
        case .null: text += "null"
        case let .bool(flag): text += flag ? "true" : "false"
        case let .int(number): text += String(number)
        case let .uint(number): text += String(number)
        case let .float(number): writeFloat(number.isFinite ? number.description : nil, number, into: &text)
        case let .double(number): writeFloat(number.isFinite ? number.description : nil, Float(number), into: &text)
        case let .string(string): writeString(string, into: &text)
        case let .bytes(data):
            text += "{\"$bytes\":"
            writeString(data.base64EncodedString(), into: &text)
            text += "}"
        case let .array(elements):
            text += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { text += "," }
                write(element, into: &text)
            }
            text += "]"
        case let .keyed(entries):
            text += "{"
            for (index, entry) in entries.enumerated() {
                if index > 0 { text += "," }
                writeString(entry.key, into: &text)
                text += ":"
                write(entry.value, into: &text)
            }
            text += "}"
        case let .port(index): text += "{\"$port\":\(index)}"
        }
    }

    private static func writeFloat(_ finite: String?, _ value: Float, into text: inout String) {
        if let finite {
            text += finite
        } else {
            text += value.isNaN ? "\"NaN\"" : value > 0 ? "\"Infinity\"" : "\"-Infinity\""
        }
    }

    private static func writeString(_ string: String, into text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }

    // MARK: - Reading

    /// Reads one JSON value that takes all of `bytes` (white space around
    /// it allowed); anything else is `.malformed`, with where and why.
    package static func read(_ bytes: UnsafeRawBufferPointer) throws(PayloadError) -> PayloadValue {
        var reader = Reader(bytes: bytes)
        reader.skipSpace()
        let value = try reader.value(depth: 0)
        reader.skipSpace()
        guard reader.offset == bytes.count else { throw .malformed("JSON: text after the value, at byte \(reader.offset)") }
        return value
    }

    private struct Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        mutating func skipSpace() {
            while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
        }

        func fail(_ what: String) -> PayloadError { .malformed("JSON: \(what) at byte \(offset)") }

        mutating func value(depth: Int) throws(PayloadError) -> PayloadValue {
            guard offset < bytes.count else { throw fail("cut short") }
            switch bytes[offset] {
            case UInt8(ascii: "n"): try literal("null"); return .null
            case UInt8(ascii: "t"): try literal("true"); return .bool(true)
            case UInt8(ascii: "f"): try literal("false"); return .bool(false)
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "["):
                guard depth < BinaryPayloadFormat.maxDepth else { throw fail("containers nested over \(BinaryPayloadFormat.maxDepth) deep") }
                offset += 1
                var elements: [PayloadValue] = []
                skipSpace()
                if try take(UInt8(ascii: "]")) { return .array(elements) }
                repeat {
                    skipSpace()
                    elements.append(try value(depth: depth + 1))
                    skipSpace()
                } while try take(UInt8(ascii: ","))
                guard try take(UInt8(ascii: "]")) else { throw fail("no ] or , after an element") }
                return .array(elements)
            case UInt8(ascii: "{"):
                guard depth < BinaryPayloadFormat.maxDepth else { throw fail("containers nested over \(BinaryPayloadFormat.maxDepth) deep") }
                return try object(depth: depth)
            default:
                return try number()
            }
        }

        mutating func object(depth: Int) throws(PayloadError) -> PayloadValue {
            offset += 1
            var entries: [PayloadValue.Entry] = []
            var keys = Set<String>()
            skipSpace()
            if try !take(UInt8(ascii: "}")) {
                repeat {
                    skipSpace()
                    let key = try string()
                    guard keys.insert(key).inserted else { throw fail("the key \"\(key)\" twice in one object") }
                    skipSpace()
                    guard try take(UInt8(ascii: ":")) else { throw fail("no : after a key") }
                    skipSpace()
                    entries.append(PayloadValue.Entry(key, try value(depth: depth + 1)))
                    skipSpace()
                } while try take(UInt8(ascii: ","))
                guard try take(UInt8(ascii: "}")) else { throw fail("no } or , after an entry") }
            }
            // The two objects that stand for what JSON has no kind for.
            if entries.count == 1, entries[0].key == "$port" {
                guard case let .int(index) = entries[0].value, (0...Int64(WireFormat.maxComponents)).contains(index) else {
                    throw fail("a $port that is not a port index")
                }
                return .port(Int(index))
            }
            if entries.count == 1, entries[0].key == "$bytes" {
                guard case let .string(base64) = entries[0].value, let data = Data(base64Encoded: base64) else {
                    throw fail("$bytes that are not base64")
                }
                return .bytes(data)
            }
            return .keyed(entries)
        }

        mutating func take(_ byte: UInt8) throws(PayloadError) -> Bool {
            guard offset < bytes.count else { throw fail("cut short") }
            guard bytes[offset] == byte else { return false }
            offset += 1
            return true
        }

        mutating func literal(_ word: StaticString) throws(PayloadError) {
            let count = word.utf8CodeUnitCount
            guard bytes.count - offset >= count,
                  memcmp(bytes.baseAddress! + offset, word.utf8Start, count) == 0
            else { throw fail("not a JSON value") }
            offset += count
        }

        mutating func number() throws(PayloadError) -> PayloadValue {
            let start = offset
            var isInteger = true
            while offset < bytes.count {
                let byte = bytes[offset]
                if byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
                    isInteger = false
                } else if !(byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) && byte != UInt8(ascii: "-") && byte != UInt8(ascii: "+") {
                    break
                }
                offset += 1
            }
            let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
            guard !text.isEmpty, text.first != "+" else { offset = start; throw fail("not a JSON value") }
            if isInteger {
                if let number = Int64(text) { return .int(number) }
                if let number = UInt64(text) { return .uint(number) }
                offset = start
                throw fail("an integer over 64 bits")
            }
            // Swift's parser also takes "inf" and "nan", which are not JSON:
            // only digits, signs, points and exponents reach here.
            guard let number = Double(text) else { offset = start; throw fail("not a number") }
            return .double(number)
        }

        mutating func string() throws(PayloadError) -> String {
            guard try take(UInt8(ascii: "\"")) else { throw fail("not a string") }
            var scalars = String.UnicodeScalarView()
            var plainStart = offset
            func flushPlain(_ end: Int) throws(PayloadError) {
                guard end > plainStart else { return }
                guard let text = String(validating: UnsafeRawBufferPointer(rebasing: bytes[plainStart..<end]), as: UTF8.self) else {
                    throw fail("a string that is not UTF-8")
                }
                scalars.append(contentsOf: text.unicodeScalars)
            }
            while true {
                guard offset < bytes.count else { throw fail("a string cut short") }
                let byte = bytes[offset]
                if byte == UInt8(ascii: "\"") {
                    try flushPlain(offset)
                    offset += 1
                    return String(scalars)
                }
                guard byte >= 0x20 else { throw fail("a control character in a string") }
                if byte != UInt8(ascii: "\\") {
                    offset += 1
                    continue
                }
                try flushPlain(offset)
                offset += 1
                scalars.append(try escape())
                plainStart = offset
            }
        }

        mutating func escape() throws(PayloadError) -> Unicode.Scalar {
            guard offset < bytes.count else { throw fail("an escape cut short") }
            let byte = bytes[offset]
            offset += 1
            switch byte {
            case UInt8(ascii: "\""): return "\""
            case UInt8(ascii: "\\"): return "\\"
            case UInt8(ascii: "/"): return "/"
            case UInt8(ascii: "b"): return "\u{08}"
            case UInt8(ascii: "f"): return "\u{0C}"
            case UInt8(ascii: "n"): return "\n"
            case UInt8(ascii: "r"): return "\r"
            case UInt8(ascii: "t"): return "\t"
            case UInt8(ascii: "u"):
                let unit = try hex4()
                if (0xD800..<0xDC00).contains(unit) {
                    guard bytes.count - offset >= 6, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
                        throw fail("a lone high surrogate")
                    }
                    offset += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw fail("a high surrogate without its low one") }
                    return Unicode.Scalar(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00))!
                }
                guard let scalar = Unicode.Scalar(unit) else { throw fail("a lone low surrogate") }
                return scalar
            default:
                throw fail("an unknown escape")
            }
        }

        mutating func hex4() throws(PayloadError) -> UInt32 {
            guard bytes.count - offset >= 4 else { throw fail("a \\u escape cut short") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                guard let digit = Self.hexDigit(bytes[offset]) else { throw fail("a \\u escape that is not hex") }
                value = value << 4 | digit
                offset += 1
            }
            return value
        }

        static func hexDigit(_ byte: UInt8) -> UInt32? {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
            default: nil
            }
        }
    }
}
