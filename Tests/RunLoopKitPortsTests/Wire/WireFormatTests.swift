// The bytes a PortMessage travels as (docs/wire-format.md), for S-PORT-2
// (what a message carries) and S-PORT-8 (a descriptor's host id): the
// document's examples byte for byte, written, sent, received and shown in
// the document itself. Round trips and every decoding error are
// WireFormatDecodingTests'.
import Glibc
import Testing
import ZeroMQ
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("Wire format: the document's examples (docs/wire-format.md)", .blocksThreads)
struct WireFormatTests {
    // MARK: - The example of docs/wire-format.md

    /// The example's reply port: pid 4242, start time 987654, port id 3.
    static let exampleReplyAddress = PortAddress(
        pid: 4242, startTime: 987_654, portID: 3, ipcPath: "/run/user/1000/runloopkit/p4242-3.sock")

    /// The example's frames, copied from the document.
    static let exampleFrames: [[UInt8]] = [
        hex("52 4C 4B 50  01  01  01 00  07 00 00 00  00"),
        hex("68 69"),
        hex("""
            52 4C 4B 44  01  01  26 00  92 10 00 00
            06 12 0F 00 00 00 00 00  03 00 00 00 00 00 00 00
            2F 72 75 6E 2F 75 73 65 72 2F 31 30 30 30 2F 72
            75 6E 6C 6F 6F 70 6B 69 74 2F 70 34 32 34 32 2D
            33 2E 73 6F 63 6B
            """),
    ]

    /// The same message in the packed form (version 2), one frame, copied from the document.
    static let examplePacked: [UInt8] = hex("""
        52 4C 4B 50  02  01  01 00  07 00 00 00  00
        02 00 00 00  68 69
        42 00 00 00  52 4C 4B 44  01  01  26 00  92 10 00 00
        06 12 0F 00 00 00 00 00  03 00 00 00 00 00 00 00
        2F 72 75 6E 2F 75 73 65 72 2F 31 30 30 30 2F 72
        75 6E 6C 6F 6F 70 6B 69 74 2F 70 34 32 34 32 2D
        33 2E 73 6F 63 6B
        """)

    static func hex(_ text: String) -> [UInt8] {
        text.split(whereSeparator: { $0 == " " || $0 == "\n" }).map { UInt8($0, radix: 16)! }
    }

    @Test("S-PORT-2: writeHeader and encodeDescriptor produce the example of docs/wire-format.md byte for byte")
    func exampleBytes() {
        let components: [PortMessage.Component] = [.data(Data("hi".utf8))]
        let size = WireFormat.headerFixedSize + components.count
        let header = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = WireFormat.writeHeader(into: UnsafeMutableRawBufferPointer(buffer), msgid: 7, hasReplyPort: true, components: components)
        }
        #expect(header == Self.exampleFrames[0])
        #expect(Array(Data("hi".utf8)) == Self.exampleFrames[1])
        #expect(WireFormat.encodeDescriptor(Self.exampleReplyAddress) == Self.exampleFrames[2])
        #expect(Self.exampleFrames.map(\.count) == [13, 2, 66])
    }

    @Test("S-PORT-2: writePacked produces the packed example of docs/wire-format.md byte for byte, and it reads back")
    func examplePackedBytes() throws {
        let components: [PortMessage.Component] = [.data(Data("hi".utf8))]
        let descriptor = WireFormat.encodeDescriptor(Self.exampleReplyAddress)
        let size = WireFormat.packedSize(frameBytes: 13 + 2 + descriptor.count, records: 2)
        let packed = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = WireFormat.writePacked(into: UnsafeMutableRawBufferPointer(buffer), msgid: 7, components: components,
                                           replyDescriptor: descriptor, traceID: nil)
        }
        #expect(packed == Self.examplePacked)
        #expect(packed.count == 89)
        let header = try WireFormatDecodingTests.readHeader(packed)
        #expect(header.isPacked && header.msgid == 7 && header.hasReplyPort && header.componentCount == 1 && header.size == 13)
        #expect(try WireFormatDecodingTests.packedRecords(packed, header: header) == [Array("hi".utf8), descriptor])
    }

    @Test("S-PORT-2: the examples printed in docs/wire-format.md are the ones these tests check")
    func documentShowsTheseBytes() throws {
        #expect(try Self.documentExample(heading: "## Example, multipart") == Self.exampleFrames)
        #expect(try Self.documentExample(heading: "## Example, packed") == [Self.examplePacked])
    }

    /// The frames of the fenced block after `heading` in docs/wire-format.md,
    /// each checked against the size its line declares.
    static func documentExample(heading: String) throws -> [[UInt8]] {
        // Tests/<target>/Wire/WireFormatTests.swift → the package root.
        let root = "\(#filePath)".split(separator: "/", omittingEmptySubsequences: false).dropLast(4).joined(separator: "/")
        let path = root + "/docs/wire-format.md"
        let document = try #require(readWholeFile(path), "cannot read \(path)")
        let lines = document.split(separator: "\n", omittingEmptySubsequences: false)
        let start = try #require(lines.firstIndex { $0.hasPrefix(heading) }, "no \(heading) in \(path)")
        let open = try #require(lines[start...].firstIndex { $0.hasPrefix("```") })
        let close = try #require(lines[(open + 1)...].firstIndex { $0.hasPrefix("```") })
        var frames: [[UInt8]] = []
        var declaredSizes: [Int] = []
        for line in lines[(open + 1)..<close] where !line.allSatisfy(\.isWhitespace) {
            var bytes = line
            if line.hasPrefix("frame ") || line.hasPrefix("payload ") {
                guard let colon = line.firstIndex(of: ":"), let parenthesis = line.firstIndex(of: "("),
                      let size = Int(line[line.index(after: parenthesis)...].prefix { $0.isNumber }) else {
                    Issue.record("cannot read the line \(line)")
                    return []
                }
                declaredSizes.append(size)
                frames.append([])
                bytes = line[line.index(after: colon)...]
            }
            guard !frames.isEmpty else {
                Issue.record("a byte line before the first frame: \(line)")
                return []
            }
            frames[frames.count - 1] += hex(String(bytes))
        }
        #expect(declaredSizes == frames.map(\.count), "\(heading): a frame's declared size is wrong")
        return frames
    }

    @Test("S-PORT-2: Port.send puts the example message on the wire exactly as documented (packed), and a message over 64 KiB as multipart")
    func sendWritesTheExample() throws {
        let (pull, destination) = try standInReceiver()
        defer { pull.close() }
        let reply = Port(sendRightTo: Self.exampleReplyAddress)

        try destination.send(msgid: 7, components: [.data(Data("hi".utf8))], replyPort: reply, before: portDeadline())
        let frames = try #require(try pull.receiveMultipart())
        #expect(frames.map { Array($0) } == [Self.examplePacked])

        // Over the pack limit: version 1, a frame per component and the reply port.
        let large = Data(repeating: 0x5A, count: WireFormat.packLimit)
        try destination.send(msgid: 8, components: [.data(large)], replyPort: reply, before: portDeadline())
        let largeFrames = try #require(try pull.receiveMultipart())
        #expect(largeFrames.count == 3)
        #expect(largeFrames.first.map { Array($0) } == Self.hex("52 4C 4B 50  01  01  01 00  08 00 00 00  00"))
        #expect(largeFrames.dropFirst().first == large)
        #expect(largeFrames.last.map { Array($0) } == Self.exampleFrames[2])
    }

    @Test("S-PORT-2: the example's bytes, from a raw peer, arrive as msgid 7 with \"hi\" and a reply port of process 4242 at its ipc path")
    func exampleDecodes() throws {
        let fixture = try InboxPort("wf-example")
        defer { fixture.close() }
        let (port, inbox) = (fixture.port, fixture.inbox)
        let peer = try RawPortPeer(endpoint: port.address.inprocEndpoint)
        try peer.send(Self.exampleFrames.map { Data($0) })
        #expect(inbox.waitForCount(1))
        let message = try #require(inbox.messages.first)
        #expect(message.msgid == 7)
        #expect(message.components == [.data(Data("hi".utf8))])
        let reply = try #require(message.replyPort)
        #expect(!reply.isLocal)
        #expect(reply.ownerProcessID == 4242)
        #expect(reply.transport == .ipc)
        #expect(reply.address == Self.exampleReplyAddress)
        #expect(reply.address.ipcPath == Self.exampleReplyAddress.ipcPath)
        #expect(port.droppedMessageCount == 0)
    }

    /// The document's version-2 descriptor: the example's reply port, host id 00 01 … 0F.
    static let exampleHost = HostIdentity(high: 0x0706_0504_0302_0100, low: 0x0F0E_0D0C_0B0A_0908)
    static let exampleDescriptorV2: [UInt8] = hex("""
        52 4C 4B 44  02  01  26 00  92 10 00 00
        06 12 0F 00 00 00 00 00  03 00 00 00 00 00 00 00
        00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F
        2F 72 75 6E 2F 75 73 65 72 2F 31 30 30 30 2F 72
        75 6E 6C 6F 6F 70 6B 69 74 2F 70 34 32 34 32 2D
        33 2E 73 6F 63 6B
        """)

    @Test("S-PORT-8: an ipc port's descriptor with its host id is version 2, as in docs/wire-format.md byte for byte, and decodes back")
    func descriptorVersion2() throws {
        let address = PortAddress(pid: 4242, startTime: 987_654, portID: 3,
                                  ipcPath: Self.exampleReplyAddress.ipcPath, hostID: Self.exampleHost)
        #expect(WireFormat.encodeDescriptor(address) == Self.exampleDescriptorV2)
        #expect(try Self.documentExample(heading: "## Example, a version-2 descriptor") == [Self.exampleDescriptorV2])
        let decoded = try WireFormatDecodingTests.decodeDescriptor(Self.exampleDescriptorV2)
        #expect(decoded == address && decoded.hostID == Self.exampleHost && decoded.ipcPath == address.ipcPath)
        // Version 1 is still read, and says nothing of the host.
        #expect(try WireFormatDecodingTests.decodeDescriptor(Self.exampleFrames[2]).hostID == nil)
        // An inproc port has no host id to carry: version 1.
        let inproc = PortAddress(pid: 4242, startTime: 1, portID: 3, ipcPath: nil, hostID: Self.exampleHost)
        #expect(WireFormat.encodeDescriptor(inproc)[4] == 1)
        // Malformed version-2 descriptors: a version-1 length, transport 0, a path past the end.
        var short = Self.exampleDescriptorV2
        short.removeLast()
        var inprocV2 = Self.exampleDescriptorV2
        inprocV2[5] = 0
        let version1Length = Array(Self.exampleDescriptorV2.prefix(28)) + Array(Self.exampleDescriptorV2.suffix(38))
        for (name, bytes) in [("one byte short", short), ("transport 0", inprocV2), ("version 1's length", version1Length)] {
            let error = WireFormatDecodingTests.descriptorError(bytes)
            #expect(WireFormatDecodingTests.isBadDescriptor(error), "\(name): \(String(describing: error))")
        }
    }
}

/// The whole of a (small) file as text, nil if it cannot be read.
func readWholeFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        if count < 0 { return nil }
        if count == 0 { break }
        bytes += buffer[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}
