// Typed payloads, the coding alone (docs/wire-format.md, "Typed payloads"):
// values of many Codable shapes in both encodings, the exact bytes, what a
// type may change, and every way bad input is refused. Sending them is
// TypedMessageTests'.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitPorts
import Testing
import RunLoopKitTestSupport

struct Order: Codable, Sendable, Equatable {
    enum Priority: String, Codable, Sendable { case low, high }
    enum Shipping: Codable, Sendable, Equatable {
        case pickup
        case post(address: String, express: Bool)
        case courier(String, at: Date)
    }

    var id: UInt64
    var items: [String]
    var quantities: [String: Int]
    var priority: Priority
    var shipping: Shipping
    var note: String?
    var scan: Data
    var weights: [Double]
    var ratio: Float
    var offset: Int8
}

/// The same type as its sender knew it, a field and a case later.
enum Evolution {
    struct Old: Codable, Sendable, Equatable {
        enum Colour: String, Codable, Sendable { case red, green }
        var name: String
        var colour: Colour
    }

    struct New: Codable, Sendable, Equatable {
        enum Colour: String, Codable, Sendable { case red, green, blue }
        var name: String
        var colour: Colour
        var size: Int?
    }
}

@Suite("Typed payloads: the coding (issue 43)", .blocksThreads)
struct PayloadCodingTests {
    static let order = Order(
        id: UInt64.max, items: ["tea", "ünïcode ✓", "", "quote \" and \\ and \n"], quantities: ["tea": 2],
        priority: .high, shipping: .courier("Ana", at: Date(timeIntervalSinceReferenceDate: 1_000.25)), note: nil,
        scan: Data([0, 1, 2, 255]), weights: [0.5, -0.0, .infinity, -.infinity, 1e-300, .greatestFiniteMagnitude],
        ratio: 0.1, offset: -128)

    @Test("a value of many shapes (strings, numbers at their limits, an enum with associated values, optionals, Data, Date, arrays, a dictionary) reads back equal, in both encodings")
    func roundTrip() throws {
        for encoding in PayloadEncoding.allCases {
            let message = try PortMessage(msgid: 3, payload: Self.order, encoding: encoding)
            #expect(message.components.count == 1, "no ports, one component")
            #expect(message.payloadTypeName == Payload.typeName(of: Order.self))
            #expect(message.payloadEncoding == encoding)
            #expect(try message.payload(as: Order.self) == Self.order, "\(encoding)")
            for shipping in [Order.Shipping.pickup, .post(address: "1 Main St", express: true)] {
                var order = Self.order
                order.shipping = shipping
                order.note = "a note"
                #expect(try PortMessage(payload: order, encoding: encoding).payload(as: Order.self) == order)
            }
        }
        // NaN reads back as NaN (it equals nothing, so compared by hand).
        for encoding in PayloadEncoding.allCases {
            let values = try PortMessage(payload: [Double.nan, 1], encoding: encoding).payload(as: [Double].self)
            #expect(values.count == 2 && values[0].isNaN && values[1] == 1)
        }
        // Top-level scalars and collections, and an optional that is nil.
        #expect(try PortMessage(payload: "just a string").payload(as: String.self) == "just a string")
        #expect(try PortMessage(payload: Int64.min).payload(as: Int64.self) == Int64.min)
        #expect(try PortMessage(payload: [[1, 2], [], [3]]).payload(as: [[Int]].self) == [[1, 2], [], [3]])
        #expect(try PortMessage(payload: Int?.none).payload(as: Int?.self) == nil)
    }

    @Test("the same value encodes to the same bytes every time; the binary form is smaller than the JSON")
    func deterministic() throws {
        var order = Self.order
        order.quantities = [:]  // a Dictionary's keys come in no fixed order
        for encoding in PayloadEncoding.allCases {
            let first = try PortMessage(payload: order, encoding: encoding).dataComponents
            for _ in 0..<5 { #expect(try PortMessage(payload: order, encoding: encoding).dataComponents == first) }
        }
        let binary = try #require(try PortMessage(payload: order).dataComponents.first)
        let json = try #require(try PortMessage(payload: order, encoding: .json).dataComponents.first)
        #expect(binary.count < json.count, "binary \(binary.count) bytes, JSON \(json.count)")
    }

    struct Point: Codable, Sendable, Equatable {
        var x: Int
        var label: String
        var tags: [Bool]
    }

    @Test("the bytes are exactly what docs/wire-format.md's golden examples show, in both encodings")
    func goldenBytes() throws {
        let point = Point(x: -3, label: "é", tags: [true, false])
        let name = Array(Payload.typeName(of: Point.self).utf8)
        let header: (UInt8) -> [UInt8] = { encoding in
            Array("RLKV".utf8) + [1, encoding, UInt8(name.count), 0] + name
        }
        let binary: [UInt8] = [
            0x0A, 3,  // keyed, 3 entries
            1, 0x78, 0x03, 0x05,  // "x": int, zig-zag(-3) = 5
            5, 0x6C, 0x61, 0x62, 0x65, 0x6C, 0x07, 2, 0xC3, 0xA9,  // "label": string of 2 bytes, "é"
            4, 0x74, 0x61, 0x67, 0x73, 0x09, 2, 0x02, 0x01,  // "tags": array of 2, true, false
        ]
        #expect(try PortMessage(payload: point).dataComponents.first.map { Array($0) } == header(0) + binary)
        let json = Array(#"{"x":-3,"label":"é","tags":[true,false]}"#.utf8)
        #expect(try PortMessage(payload: point, encoding: .json).dataComponents.first.map { Array($0) } == header(1) + json)
        #expect(Payload.typeName(of: Point.self) == "RunLoopKitPortsTests.PayloadCodingTests.Point")
        // A port is a port component and its index; bytes are bytes.
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let message = try PortMessage(payload: Data([7]))
        #expect(message.dataComponents.first.map { Array($0.suffix(3)) } == [0x08, 1, 7])
        let withPort = try PortMessage(payload: [port, port])
        #expect(withPort.components.count == 2, "one port component for a port met twice")
        #expect(withPort.dataComponents.first.map { Array($0.suffix(6)) } == [0x09, 2, 0x0B, 0, 0x0B, 0])
    }

    /// docs/wire-format.md's `Shop.Job`.
    struct Job: Codable, Sendable {
        var id: Int
        var tags: [String]
        var results: Port
    }

    @Test("docs/wire-format.md's typed payload examples are what the coder writes for their value, and read back to it")
    func documentExamples() throws {
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let (tree, ports) = try PayloadEncoder.encode(Job(id: 7, tags: ["a"], results: port))
        #expect(ports.count == 1 && ports[0] === port)
        for (encoding, heading) in [(PayloadEncoding.binary, "## Example, a typed payload (binary)"), (.json, "## Example, a typed payload (JSON)")] {
            let documented = try WireFormatTests.documentExample(heading: heading)
            #expect(documented == [Payload.bytes(of: tree, typeName: "Shop.Job", encoding: encoding)], "\(heading)")
            let read = try #require(documented.first).withUnsafeBytes { bytes in
                Result { () throws(PayloadError) in try Payload.tree(bytes, Payload.readHeader(bytes)) }
            }
            let job = try PayloadDecoder.decode(Job.self, from: read.get(), ports: [port])
            #expect(job.id == 7 && job.tags == ["a"] && job.results === port)
        }
    }

    struct Envelope: Codable, Sendable {
        var reply: Port
        var others: [Port]
        var maybe: Port?
        var nested: [String: [Port]]
    }

    @Test("S-PORT-3: ports inside a value are port components, never bytes; read back they are the same objects, nested and optional ones too")
    func portsAreComponents() throws {
        let (a, b, c) = (try Port(transport: .inproc), try Port(transport: .ipc), try Port(transport: .inproc))
        defer { for port in [a, b, c] { port.invalidate() } }
        for encoding in PayloadEncoding.allCases {
            let message = try PortMessage(payload: Envelope(reply: a, others: [b, a], maybe: c, nested: ["x": [b]]), encoding: encoding)
            #expect(message.components.count == 4, "the payload and three distinct ports")
            let read = try message.payload(as: Envelope.self)
            #expect(read.reply === a && read.others[0] === b && read.others[1] === a && read.maybe === c && read.nested["x"]?[0] === b)
            let none = try PortMessage(payload: Envelope(reply: a, others: [], maybe: nil, nested: [:]), encoding: encoding)
            #expect(try none.payload(as: Envelope.self).maybe == nil)
        }
        // Another coder cannot carry a port: an error that says so.
        #expect(throws: EncodingError.self) { try JSONEncoder().encode([a]) }
    }

    @Test("a new optional field reads old messages as nil, and old readers skip it; a case the reader does not know is .valueDoesNotFit")
    func evolution() throws {
        let old = Evolution.Old(name: "box", colour: .green)
        // Written by the old type, read as the new one: under the new type's
        // name, as a program that changed its type sends it.
        let oldBytes = try PortMessage(payload: old).components
        var renamed = try #require(oldBytes.first.flatMap { if case let .data(d) = $0 { d } else { nil } })
        renamed = retyped(renamed, to: Evolution.New.self)
        #expect(try PortMessage(components: [.data(renamed)]).payload(as: Evolution.New.self) == Evolution.New(name: "box", colour: .green, size: nil))
        // The new one, read by the old type: the new field is skipped.
        let new = Evolution.New(name: "box", colour: .red, size: 3)
        let newBytes = retyped(try #require(try PortMessage(payload: new).dataComponents.first), to: Evolution.Old.self)
        #expect(try PortMessage(components: [.data(newBytes)]).payload(as: Evolution.Old.self) == Evolution.Old(name: "box", colour: .red))
        // A case the old reader does not know.
        let blue = retyped(try #require(try PortMessage(payload: Evolution.New(name: "box", colour: .blue)).dataComponents.first), to: Evolution.Old.self)
        #expect {
            try PortMessage(components: [.data(blue)]).payload(as: Evolution.Old.self)
        } throws: { error in
            guard case let .valueDoesNotFit(path, reason) = error as? PayloadError else { return false }
            return path == "colour" && reason.contains("blue")
        }
    }

    /// A payload's bytes with its type name replaced by `type`'s.
    func retyped<T>(_ payload: Data, to type: T.Type) -> Data {
        let bytes = Array(payload)
        let nameLength = Int(bytes[6]) | Int(bytes[7]) << 8
        let name = Array(Payload.typeName(of: type).utf8)
        return Data(bytes[0..<6] + [UInt8(name.count & 0xFF), UInt8(name.count >> 8)] + name + bytes[(8 + nameLength)...])
    }

    @Test("a payload of another type, another version or encoding, bytes that do not read, an untyped message and a missing port are each their typed error, never a crash")
    func badInput() throws {
        let payload = try #require(try PortMessage(payload: Self.order).dataComponents.first)
        func read(_ bytes: [UInt8], ports: [Port] = []) -> PayloadError? {
            do {
                _ = try PortMessage(components: [.data(Data(bytes))] + ports.map { .port($0) }).payload(as: Order.self)
                return nil
            } catch {
                return error
            }
        }
        #expect(throws: PayloadError.wrongType(expected: Payload.typeName(of: Point.self), found: Payload.typeName(of: Order.self))) {
            try PortMessage(payload: Self.order).payload(as: Point.self)
        }
        var bytes = Array(payload)
        bytes[4] = 2
        #expect(read(bytes) == .unsupportedVersion(2))
        bytes[4] = 1
        bytes[5] = 9
        #expect(read(bytes) == .unknownEncoding(9))
        #expect(read(Array("hello".utf8))?.caseName == "notAPayload")
        #expect(throws: PayloadError.self) { try PortMessage(msgid: 1).payload(as: Order.self) }
        // Every prefix of a good payload, and every byte of it flipped: an
        // error or (rarely) a value, never a crash or a hang.
        for length in 0..<payload.count {
            #expect(read(Array(payload.prefix(length))) != nil, "a payload cut to \(length) bytes read")
        }
        for index in 0..<payload.count {
            var flipped = Array(payload)
            flipped[index] ^= 0xFF
            _ = read(flipped)
        }
        // A port index with no port component.
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let components = try PortMessage(payload: [port]).components
        #expect(throws: PayloadError.self) { try PortMessage(components: [components[0]]).payload(as: [Port].self) }
        // Nesting past the limit is refused, not recursed into.
        let deep: [UInt8] = Array(repeating: [UInt8(0x09), 1], count: 200).flatMap { $0 } + [0x00]
        func header<T>(_ type: T.Type) -> [UInt8] {
            let name = Array(Payload.typeName(of: type).utf8)
            return Array("RLKV".utf8) + [1, 0, UInt8(name.count), 0] + name
        }
        #expect {
            try PortMessage(components: [.data(Data(header(Int?.self) + deep))]).payload(as: Int?.self)
        } throws: { ($0 as? PayloadError)?.caseName == "malformed" }
        // A count larger than the bytes left is refused before anything is reserved.
        #expect {
            try PortMessage(components: [.data(Data(header([Int].self) + [0x09, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]))]).payload(as: [Int].self)
        } throws: { ($0 as? PayloadError)?.caseName == "malformed" }
        // A number that does not fit its type.
        let big = try PortMessage(payload: 300)
        #expect {
            try PortMessage(components: [.data(retyped(big.dataComponents[0], to: Int8.self))]).payload(as: Int8.self)
        } throws: { ($0 as? PayloadError)?.caseName == "valueDoesNotFit" }
    }

    @Test("private and local types name themselves without the build-specific context, so another build of the program reads them")
    func typeNames() {
        struct Local: Codable {}
        #expect(Payload.typeName(of: Local.self).contains("unknown context") == false)
        #expect(Payload.typeName(of: [Order].self) == "Swift.Array<RunLoopKitPortsTests.Order>")
    }
}
