// Version 3, what goes over tcp (docs/wire-format.md, "Version 3",
// "tcp connections"): the extension area and its destination field, tcp
// descriptors, and the hello and welcome of a connection, checked against
// the document's examples byte for byte, read back by both decoders, with
// unknown fields stepped over and malformed ones refused.
import Glibc
import RunLoopKit
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Wire format version 3: tcp messages, descriptors and connections (docs/wire-format.md)", .blocksThreads)
struct WireFormatVersion3Tests {
    /// The document's instances: bytes 00…0F and 10…1F, each half little-endian.
    static let owner = ProcessInstance(high: 0x0706_0504_0302_0100, low: 0x0F0E_0D0C_0B0A_0908)
    static let destination = ProcessInstance(high: 0x1716_1514_1312_1110, low: 0x1F1E_1D1C_1B1A_1918)
    static let serverKey = try! CurveKey(bytes: Array(0x20...0x3F))
    static let exampleAddress = PortAddress(
        pid: 4242, startTime: 987654, portID: 3,
        route: .tcp(TCPTransport.Endpoint(instance: owner, listener: "tcp://10.0.0.1:7400", serverKey: serverKey)))

    @Test("S-NET-1, S-NET-5: the version-3 descriptor and packed message are what RunLoopKit writes (a packed frame extended as a tcp send extends it), byte for byte, and read back to the same port, destination and records")
    func documentExamples() throws {
        let descriptor = try #require(try WireFormatTests.documentExample(heading: "## Example, a version-3 descriptor").first)
        #expect(WireFormat.encodeDescriptor(Self.exampleAddress) == descriptor)
        let decoded = try descriptor.withUnsafeBytes { try WireFormat.decodeDescriptor($0) }
        #expect(decoded == Self.exampleAddress)
        #expect(decoded.tcpEndpoint?.serverKey == Self.serverKey)

        let packed = try #require(try WireFormatTests.documentExample(heading: "## Example, packed version 3 (tcp)").first)
        let target = WireFormat.Destination(instance: Self.destination, portID: 5)
        let written = RawWire.tcpMessage(to: target, msgid: 7, data: Array("hi".utf8), replyDescriptor: descriptor)
        #expect(written == packed)
        let header = try packed.withUnsafeBytes { try WireFormat.readHeader($0) }
        #expect(header.isPacked && header.msgid == 7 && header.hasReplyPort)
        #expect(try packed.withUnsafeBytes { try WireFormat.routedHeader($0).destination } == target)
        #expect(try WireFormatDecodingTests.packedRecords(packed, header: header) == [Array("hi".utf8), descriptor])
    }

    @Test("S-NET-5: both decoders read a version-3 message, packed and multipart, and agree; a field of an unknown type is stepped over")
    func decodersReadVersion3() throws {
        let packed = try #require(try WireFormatTests.documentExample(heading: "## Example, packed version 3 (tcp)").first)
        let descriptor = try #require(try WireFormatTests.documentExample(heading: "## Example, a version-3 descriptor").first)
        let area = Array(packed[13..<45])
        let unknownThenDestination = RawWire.extensionArea([(9, [1, 2, 3]), (1, Array(area[8...]))])
        let inputs: [[[UInt8]]] = [
            [packed],
            [Array(RawWire.header(version: 3, flags: 0b101, msgid: 7, kinds: [0])) + area, Array("hi".utf8), descriptor],
            [Array(RawWire.packedV3(msgid: 7, kinds: [0], extensionArea: unknownThenDestination, records: [Data("hi".utf8)]))],
        ]
        for frames in inputs {
            var input: [UInt8] = [0] + RawWire.littleEndian(UInt16(frames.count))
            for frame in frames { input += RawWire.littleEndian(UInt16(frame.count)) + frame }
            let outcome = input.withUnsafeBytes { WireFuzzing.run($0) }
            #expect(outcome.decodedMessages == 1 && outcome.refusedMessages == 0, "\(outcome.errors)")
        }
        #expect(try inputs[2][0].withUnsafeBytes { try WireFormat.routedHeader($0).destination }
                == WireFormat.Destination(instance: Self.destination, portID: 5))
    }

    @Test("S-NET-5: a multipart header extended for tcp reads back as version 3, multipart, with its destination")
    func multipartHeaderExtended() throws {
        let header = Array(RawWire.header(version: 1, flags: 1, msgid: 9, kinds: [0, 1]))
        let target = WireFormat.Destination(instance: Self.destination, portID: 77)
        let extended = header.withUnsafeBytes { WireFormat.extendedMultipartHeader($0, with: WireFormat.ExtensionFields(destination: target, trace: nil)) }
        #expect(extended.count == header.count + 32)
        let read = try extended.withUnsafeBytes { try WireFormat.readHeader($0) }
        #expect(!read.isPacked && read.msgid == 9 && read.hasReplyPort && read.componentCount == 2 && read.size == extended.count)
        #expect(try extended.withUnsafeBytes { try WireFormat.routedHeader($0).destination } == target)
    }

    @Test("S-NET-1: malformed version-3 descriptors are refused as badDescriptor")
    func malformedTCPDescriptors() throws {
        let good = WireFormat.encodeDescriptor(Self.exampleAddress)
        func changed(_ edit: (inout [UInt8]) -> Void) -> [UInt8] {
            var bytes = good
            edit(&bytes)
            return bytes
        }
        let connectingOnly = WireFormat.encodeDescriptor(PortAddress(
            pid: 4242, startTime: 1, portID: 3, route: .tcp(TCPTransport.Endpoint(instance: Self.owner, listener: nil, serverKey: nil))))
        #expect(connectingOnly.count == 77)
        #expect((try? connectingOnly.withUnsafeBytes { try WireFormat.decodeDescriptor($0) })?.tcpEndpoint?.listener == nil)
        let malformed: [(String, [UInt8])] = [
            ("transport 1 in version 3", changed { $0[5] = 1 }),
            ("cut by a byte", Array(good.dropLast())),
            ("unknown security", changed { $0[44] = 7 }),
            ("a key with plain text", changed { $0[44] = 0 }),
            ("a CURVE key and no endpoint", { var bytes = connectingOnly; bytes[44] = 1; return bytes }()),
            ("an endpoint that is not tcp://", changed { $0[77] = UInt8(ascii: "u") }),
            ("an endpoint with a space", changed { $0[80] = 0x20 }),
            ("pid 0", changed { $0[8] = 0; $0[9] = 0 }),
            // Once decoded, it stopped the process that asked for the port's transport.
            ("an endpoint with no port", WireFormat.encodeDescriptor(PortAddress(
                pid: 4242, startTime: 1, portID: 3,
                route: .tcp(TCPTransport.Endpoint(instance: Self.owner, listener: "tcp://example.net", serverKey: Self.exampleAddress.tcpEndpoint?.serverKey))))),
            ("an endpoint with port 0", WireFormat.encodeDescriptor(PortAddress(
                pid: 4242, startTime: 1, portID: 3,
                route: .tcp(TCPTransport.Endpoint(instance: Self.owner, listener: "tcp://10.1.2.3:0", serverKey: Self.exampleAddress.tcpEndpoint?.serverKey))))),
        ]
        for (name, bytes) in malformed {
            do {
                _ = try bytes.withUnsafeBytes { try WireFormat.decodeDescriptor($0) }
                Issue.record("\(name): accepted")
            } catch let error as WireFormat.DecodeError {
                guard case .badDescriptor = error else { Issue.record("\(name): \(error)"); continue }
            }
        }
    }

    @Test("S-NET-1: the hello and welcome of the document are what a connection sends, and read back")
    func helloAndWelcome() throws {
        let frames = try WireFormatTests.documentExample(heading: "## Example, hello and welcome")
        #expect(frames.count == 2)
        #expect(WireFormat.encodeControl(.hello(from: Self.destination, expecting: Self.owner)) == frames[0])
        #expect(WireFormat.encodeControl(.welcome(from: Self.owner)) == frames[1])
        #expect(try frames[0].withUnsafeBytes { try WireFormat.decodeControl($0) } == .hello(from: Self.destination, expecting: Self.owner))
        #expect(try frames[1].withUnsafeBytes { try WireFormat.decodeControl($0) } == .welcome(from: Self.owner))
        #expect(throws: WireFormat.DecodeError.self) { try Array(frames[0].dropLast()).withUnsafeBytes { try WireFormat.decodeControl($0) } }
    }

    @Test("S-NET-1: a send right to a tcp port of another process carries its destination in every message: what Port.send writes is version 3 naming the port's instance and id")
    func sendNamesTheDestination() throws {
        let address = PortAddress(pid: 77, startTime: 1, portID: 12,
                                  route: .tcp(TCPTransport.Endpoint(instance: Self.destination, listener: "tcp://127.0.0.1:1", serverKey: nil)))
        let channel = SendChannel(address: address)
        #expect(channel.destination == WireFormat.Destination(instance: Self.destination, portID: 12))
        #expect(SendChannel(address: WireFormatTests.exampleReplyAddress).destination == nil)
    }
}
