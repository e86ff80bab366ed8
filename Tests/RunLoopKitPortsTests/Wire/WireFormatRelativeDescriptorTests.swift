// Home frames and version-4 descriptors (docs/wire-format.md, "Home
// frames and relative descriptors"): a process's own tcp ports named
// relative to the connection a message travels, checked against the
// document's examples byte for byte, read by both decoders against the
// sender's home, and refused without one or when malformed.
import Glibc
import RunLoopKit
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Wire format: home frames and version-4 descriptors (docs/wire-format.md)", .blocksThreads)
struct WireFormatRelativeDescriptorTests {
    typealias Example = WireFormatVersion3Tests

    /// The listener's home of the document's example: one CURVE endpoint.
    static let listenerHome = [TCPHome.Listener(endpoint: "tcp://10.0.0.1:7400", serverKey: Example.serverKey)]

    static func exampleFrames() throws -> [[UInt8]] {
        try WireFormatTests.documentExample(heading: "## Example, hello and welcome with home frames")
    }

    static func relativeExample() throws -> [UInt8] {
        try #require(try WireFormatTests.documentExample(heading: "## Example, a version-4 descriptor").first)
    }

    @Test("S-NET-1, S-NET-5: the document's hello and welcome with home frames are what a connection sends and read back; its version-4 descriptor and the packed message carrying it are what RunLoopKit writes, and read against the welcome's home the descriptor names the version-3 example's port")
    func documentExamples() throws {
        let frames = try Self.exampleFrames()
        try #require(frames.count == 4)
        #expect(WireFormat.encodeControl(.hello(from: Example.destination, expecting: Example.owner)) == frames[0])
        #expect(WireFormat.encodeHome(pid: 4343, startTime: 0, listeners: []) == frames[1])
        #expect(WireFormat.encodeControl(.welcome(from: Example.owner)) == frames[2])
        #expect(WireFormat.encodeHome(pid: 4242, startTime: 987_654, listeners: Self.listenerHome) == frames[3])
        let dialler = try frames[1].withUnsafeBytes { try WireFormat.decodeHome($0, of: Example.destination) }
        #expect(dialler.pid == 4343 && dialler.listeners.isEmpty && dialler.instance == Example.destination)
        let home = try frames[3].withUnsafeBytes { try WireFormat.decodeHome($0, of: Example.owner) }
        #expect(home.pid == 4242 && home.startTime == 987_654 && home.listeners == Self.listenerHome)

        let relative = try Self.relativeExample()
        #expect(WireFormat.encodeRelativeDescriptor(portID: 3, listener: 0) == relative)
        let named = try relative.withUnsafeBytes { try WireFormat.decodeDescriptor($0, sender: home) }
        #expect(named == Example.exampleAddress)
        let full = try #require(try WireFormatTests.documentExample(heading: "## Example, a version-3 descriptor").first)
        #expect(WireFormat.encodeDescriptor(named) == full, "the same port as the full descriptor, pid and start time too")

        let packed = try #require(try WireFormatTests.documentExample(heading: "## Example, packed version 3 with a version-4 reply port").first)
        let target = WireFormat.Destination(instance: Example.destination, portID: 5)
        #expect(RawWire.tcpMessage(to: target, msgid: 7, data: Array("hi".utf8), replyDescriptor: relative) == packed)
        let header = try packed.withUnsafeBytes { try WireFormat.readHeader($0) }
        #expect(try WireFormatDecodingTests.packedRecords(packed, header: header) == [Array("hi".utf8), relative])
    }

    /// `frames`' messages in the fuzzer's input format: over a connection
    /// whose sender sent `home` (its first frame), or with no home at all.
    static func input(_ messages: [[[UInt8]]], home: [UInt8]?) -> [UInt8] {
        var input: [UInt8] = [home == nil ? 0 : 4]
        for frames in (home.map { [[$0]] } ?? []) + messages {
            input += RawWire.littleEndian(UInt16(frames.count))
            for frame in frames { input += RawWire.littleEndian(UInt16(frame.count)) + frame }
        }
        return input
    }

    @Test("S-NET-5: both decoders read a version-4 reply port and port component, packed and multipart, against the sender's home, and agree; without a home (over inproc or ipc, or a peer that sent none) the message is refused as badDescriptor")
    func decodersReadVersion4() throws {
        let relative = try Self.relativeExample()
        let packed = try #require(try WireFormatTests.documentExample(heading: "## Example, packed version 3 with a version-4 reply port").first)
        let area = Array(packed[13..<45])
        let listensNowhere = WireFormat.encodeRelativeDescriptor(portID: 9, listener: WireFormat.noListener)
        let messages: [[[UInt8]]] = [
            [packed],
            [Array(RawWire.header(version: 3, flags: 0b101, msgid: 7, kinds: [0, 1])) + area, Array("hi".utf8), listensNowhere, relative],
        ]
        // The fuzzer's home is read as its instance `connectionPeer`, the document's owner.
        let home = WireFormat.encodeHome(pid: 4242, startTime: 987_654, listeners: Self.listenerHome)
        for message in messages {
            let read = Self.input([message], home: home).withUnsafeBytes { WireFuzzing.run($0) }
            #expect(read.decodedMessages == 1 && read.refusedMessages == 0, "\(read.errors)")
            #expect(read.descriptorVersions == [3, 4])
            let refused = Self.input([message], home: nil).withUnsafeBytes { WireFuzzing.run($0) }
            #expect(refused.decodedMessages == 0 && refused.refusedMessages == 1 && refused.errors == ["badDescriptor"])
        }
    }

    @Test("S-NET-1: a version-4 descriptor read against a home gives the address its full descriptor gives: the sender's instance, pid and start time, and the endpoint and key at its position, or none for 255")
    func relativeAddresses() throws {
        let plain = TCPHome.Listener(endpoint: "tcp://[::1]:9000", serverKey: nil)
        let home = TCPHome(instance: Example.owner, pid: 77, startTime: 5, listeners: Self.listenerHome + [plain])
        func read(_ position: UInt8) throws -> PortAddress {
            try WireFormat.encodeRelativeDescriptor(portID: 12, listener: position).withUnsafeBytes {
                try WireFormat.decodeDescriptor($0, sender: home)
            }
        }
        let expected: [(UInt8, TCPTransport.Endpoint)] = [
            (0, .init(instance: Example.owner, listener: "tcp://10.0.0.1:7400", serverKey: Example.serverKey)),
            (1, .init(instance: Example.owner, listener: "tcp://[::1]:9000", serverKey: nil)),
            (WireFormat.noListener, .init(instance: Example.owner, listener: nil, serverKey: nil)),
        ]
        for (position, endpoint) in expected {
            let address = try read(position)
            #expect(address == PortAddress(pid: 77, startTime: 5, portID: 12, route: .tcp(endpoint)))
            #expect(address.pid == 77 && address.startTime == 5)
        }
    }

    @Test("S-NET-1: malformed home frames and version-4 descriptors are refused: a home frame cut short, with bytes after its last endpoint, an endpoint that is not tcp://host:port, a key with security 0, an unknown security byte; a version-4 descriptor of another length, transport or reserved byte, an endpoint past the home's, or with no home (and never standing alone)")
    func malformedHomesAndDescriptors() throws {
        let home = WireFormat.encodeHome(pid: 4242, startTime: 987_654, listeners: Self.listenerHome)
        func homeChanged(_ edit: (inout [UInt8]) -> Void) -> [UInt8] {
            var bytes = home
            edit(&bytes)
            return bytes
        }
        let badHomes: [(String, [UInt8])] = [
            ("cut short", Array(home.dropLast(3))),
            ("a byte after its last endpoint", home + [0]),
            ("an endpoint that is not tcp://host:port", homeChanged { $0[home.count - 1] = 0x20 }),
            ("a key with security 0", homeChanged { $0[19] = 0 }),
            ("an unknown security byte", homeChanged { $0[19] = 7 }),
            ("a pid of 0", homeChanged { for index in 6..<10 { $0[index] = 0 } }),
            ("another type", homeChanged { $0[5] = 2 }),
            ("another version", homeChanged { $0[4] = 2 }),
        ]
        for (what, bytes) in badHomes {
            #expect(throws: WireFormat.DecodeError.self, "\(what)") {
                try bytes.withUnsafeBytes { try WireFormat.decodeHome($0, of: Example.owner) }
            }
        }

        let sender = try home.withUnsafeBytes { try WireFormat.decodeHome($0, of: Example.owner) }
        let relative = try Self.relativeExample()
        func changed(_ edit: (inout [UInt8]) -> Void) -> [UInt8] {
            var bytes = relative
            edit(&bytes)
            return bytes
        }
        let badDescriptors: [(String, [UInt8], TCPHome?)] = [
            ("15 bytes", Array(relative.dropLast()), sender),
            ("17 bytes", relative + [0], sender),
            ("transport 1", changed { $0[5] = 1 }, sender),
            ("a reserved byte of 1", changed { $0[7] = 1 }, sender),
            ("endpoint 1 of a home with one", changed { $0[6] = 1 }, sender),
            ("no home", relative, nil),
        ]
        for (what, bytes, home) in badDescriptors {
            #expect(throws: WireFormat.DecodeError.self, "\(what)") {
                try bytes.withUnsafeBytes { try WireFormat.decodeDescriptor($0, sender: home) }
            }
        }
        // Where a descriptor stands alone (a name file, a tap record, `Port.fromDescriptor`).
        #expect(throws: WireFormat.DecodeError.self) { try relative.withUnsafeBytes { try WireFormat.decodeDescriptor($0) } }
        #expect(throws: PortError.self) { try Port.fromDescriptor(relative) }
    }
}
