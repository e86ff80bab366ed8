// The bytes a PortMessage travels as (docs/wire-format.md), for S-PORT-2
// (what a message carries) and S-PORT-7 (what a receiver refuses): the
// document's example byte for byte, round trips, and every decoding error.
import Glibc
import Testing
import ZeroMQ
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("Wire format (docs/wire-format.md)")
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
        let header = try Self.readHeader(packed)
        #expect(header.isPacked && header.msgid == 7 && header.hasReplyPort && header.componentCount == 1 && header.size == 13)
        #expect(try Self.packedRecords(packed, header: header) == [Array("hi".utf8), descriptor])
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
            if line.hasPrefix("frame ") {
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

    // MARK: - Round trips

    static func header(msgid: UInt32, hasReplyPort: Bool, components: [PortMessage.Component], traceID: UInt64? = nil) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: WireFormat.headerSize(componentCount: components.count, traced: traceID != nil)) { buffer, count in
            count = WireFormat.writeHeader(into: UnsafeMutableRawBufferPointer(buffer), msgid: msgid, hasReplyPort: hasReplyPort,
                                           components: components, traceID: traceID)
        }
    }

    /// The component kinds `header` reads from its frame's `bytes`.
    static func kinds(_ header: WireFormat.Header, _ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { header.kinds(in: $0) }
    }

    static func readHeader(_ bytes: [UInt8]) throws(WireFormat.DecodeError) -> WireFormat.Header {
        try bytes.withUnsafeBytes { buffer in Result { () throws(WireFormat.DecodeError) in try WireFormat.readHeader(buffer) } }.get()
    }

    static func packedRecords(_ bytes: [UInt8], header: WireFormat.Header) throws(WireFormat.DecodeError) -> [[UInt8]] {
        var records: [[UInt8]] = []
        try bytes.withUnsafeBytes { buffer in
            Result { () throws(WireFormat.DecodeError) in
                try WireFormat.readPackedRecords(buffer, header: header) { _, record in records.append(Array(record)) }
            }
        }.get()
        return records
    }

    static func decodeDescriptor(_ bytes: [UInt8]) throws(WireFormat.DecodeError) -> PortAddress {
        try bytes.withUnsafeBytes { buffer in Result { () throws(WireFormat.DecodeError) in try WireFormat.decodeDescriptor(buffer) } }.get()
    }

    @Test("S-PORT-2: a header read back gives the msgid, reply flag and component kinds written",
          arguments: [0, 1, 2, 255, 256], [UInt32.min, 7, .max])
    func headerRoundTrip(componentCount: Int, msgid: UInt32) throws {
        let somePort = Port(sendRightTo: PortAddress(pid: 1, startTime: 1, portID: 1, ipcPath: nil))
        let components = (0..<componentCount).map { index in
            index % 3 == 1 ? PortMessage.Component.port(somePort) : .data(Data([UInt8(truncatingIfNeeded: index)]))
        }
        for hasReplyPort in [false, true] {
            let bytes = Self.header(msgid: msgid, hasReplyPort: hasReplyPort, components: components)
            #expect(bytes.count == 12 + componentCount)
            let header = try Self.readHeader(bytes)
            #expect(header.msgid == msgid)
            #expect(header.hasReplyPort == hasReplyPort)
            #expect(Self.kinds(header, bytes) == components.map { if case .port = $0 { 1 } else { 0 } })
            #expect(header.frameCount == 1 + componentCount + (hasReplyPort ? 1 : 0))
            #expect(header.traceID == nil)

            // With the tap's trace id (flag bit 1): 8 more bytes, read back as written.
            let traced = Self.header(msgid: msgid, hasReplyPort: hasReplyPort, components: components, traceID: 0x0123_4567_89AB_CDEF)
            #expect(traced.count == 20 + componentCount)
            #expect(traced[5] & 0x02 != 0)
            let tracedHeader = try Self.readHeader(traced)
            #expect(tracedHeader.traceID == 0x0123_4567_89AB_CDEF)
            #expect(tracedHeader.msgid == msgid && Self.kinds(tracedHeader, traced) == Self.kinds(header, bytes))
            // A trace flag without its 8 bytes, or 8 bytes without the flag, is truncated or too long.
            var flagOnly = bytes
            flagOnly[5] |= 0x02
            #expect(throws: WireFormat.DecodeError.self) { try Self.readHeader(flagOnly) }
            var bytesOnly = traced
            bytesOnly[5] &= ~0x02
            #expect(throws: WireFormat.DecodeError.self) { try Self.readHeader(bytesOnly) }
        }
    }

    static let addresses: [PortAddress] = [
        PortAddress(pid: 1, startTime: 0, portID: 0, ipcPath: nil),
        PortAddress(pid: .max, startTime: .max, portID: .max, ipcPath: nil),
        PortAddress(pid: 4242, startTime: 987_654, portID: 3, ipcPath: "/"),
        PortAddress(pid: 77, startTime: 1 << 40, portID: 1 << 63, ipcPath: "/" + String(repeating: "p", count: 106)),
        PortAddress(pid: 12, startTime: 34, portID: 56, ipcPath: "/tmp/runloopkit-1000/é ü/p12-56.sock"),
    ]

    @Test("S-PORT-2: a descriptor decodes to the address encoded, path included", arguments: addresses)
    func descriptorRoundTrip(address: PortAddress) throws {
        let bytes = WireFormat.encodeDescriptor(address)
        #expect(bytes.count == 28 + (address.ipcPath?.utf8.count ?? 0))
        let decoded = try Self.decodeDescriptor(bytes)
        #expect(decoded == address)
        #expect(decoded.pid == address.pid && decoded.startTime == address.startTime && decoded.portID == address.portID)
        #expect(decoded.ipcPath == address.ipcPath)
    }

    // MARK: - Every decoding error

    static func headerError(_ bytes: [UInt8]) -> WireFormat.DecodeError? {
        do {
            _ = try readHeader(bytes)
            return nil
        } catch {
            return error
        }
    }

    static func descriptorError(_ bytes: [UInt8]) -> WireFormat.DecodeError? {
        do {
            _ = try decodeDescriptor(bytes)
            return nil
        } catch {
            return error
        }
    }

    static func isShortFrame(_ error: WireFormat.DecodeError?) -> Bool {
        if case .shortFrame? = error { true } else { false }
    }

    static func isBadDescriptor(_ error: WireFormat.DecodeError?) -> Bool {
        if case .badDescriptor? = error { true } else { false }
    }

    @Test("S-PORT-7: readHeader refuses each malformed header with the matching DecodeError")
    func headerErrors() {
        let good = Array(RawWire.header(msgid: 9, kinds: [0, 1]))
        #expect(Self.headerError(good) == nil)
        #expect(Self.isShortFrame(Self.headerError([])))
        #expect(Self.isShortFrame(Self.headerError(Array(good.prefix(11)))))
        #expect(Self.isShortFrame(Self.headerError(Array(good.prefix(13)))), "12 + C bytes, C = 2, one kind missing")
        #expect(Self.isShortFrame(Self.headerError(good + [0])), "12 + C bytes, C = 2, one byte too many")
        #expect(Self.headerError(Array(RawWire.header(magic: Array("RLKX".utf8), msgid: 9))) == .badMagic)
        #expect(Self.headerError(Array(RawWire.header(magic: Array("RLKD".utf8), msgid: 9))) == .badMagic)
        #expect(Self.headerError(Array(RawWire.header(version: 0, msgid: 9))) == .unsupportedVersion(0))
        #expect(Self.headerError(Array(RawWire.header(version: 3, msgid: 9))) == .unsupportedVersion(3))
        // Version 2 (packed) is known; its header may be followed by records, never cut short.
        #expect(Self.headerError(Array(RawWire.header(version: 2, msgid: 9))) == nil)
        #expect(Self.headerError(Array(RawWire.header(version: 2, msgid: 9, kinds: [0, 0]) + [1, 2, 3])) == nil)
        #expect(Self.isShortFrame(Self.headerError(Array(RawWire.header(version: 2, msgid: 9, kinds: [0, 0]).prefix(13)))))
        #expect(Self.headerError(Array(RawWire.header(flags: 0x04, msgid: 9))) == .unknownFlags(0x04))
        #expect(Self.headerError(Array(RawWire.header(flags: 0xFF, msgid: 9))) == .unknownFlags(0xFF))
        #expect(Self.headerError(Array(RawWire.header(msgid: 9, kinds: Array(repeating: 0, count: 257)))) == .tooManyComponents(257))
        #expect(Self.headerError(Array(RawWire.header(count: 0xFFFF, msgid: 9))) == .tooManyComponents(0xFFFF))
        #expect(Self.headerError(Array(RawWire.header(msgid: 9, kinds: [0, 2]))) == .unknownComponentKind(2))
        #expect(Self.headerError(Array(RawWire.header(msgid: 9, kinds: [255]))) == .unknownComponentKind(255))
        #expect(Self.headerError(Array(RawWire.header(msgid: 9, kinds: Array(repeating: 1, count: 256)))) == nil)
    }

    @Test("S-PORT-2: writePacked and readPackedRecords round-trip data, port components, the reply port and a trace id",
          arguments: [0, 1, 5, 256])
    func packedRoundTrip(componentCount: Int) throws {
        let somePort = Port(sendRightTo: PortAddress(pid: 1, startTime: 1, portID: 1, ipcPath: "/tmp/p.sock"))
        let components = (0..<componentCount).map { index in
            index % 3 == 1 ? PortMessage.Component.port(somePort) : .data(Data(repeating: UInt8(truncatingIfNeeded: index), count: index))
        }
        let expected: [[UInt8]] = components.map { component in
            switch component {
            case let .data(data): Array(data)
            case .port: somePort.descriptorBytes
            }
        } + [somePort.descriptorBytes]
        let frameBytes = WireFormat.headerSize(componentCount: componentCount, traced: true) + expected.reduce(0) { $0 + $1.count }
        let size = WireFormat.packedSize(frameBytes: frameBytes, records: expected.count)
        let packed = [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
            count = WireFormat.writePacked(into: UnsafeMutableRawBufferPointer(buffer), msgid: 42, components: components,
                                           replyDescriptor: somePort.descriptorBytes, traceID: 77)
        }
        #expect(packed.count == size)
        let header = try Self.readHeader(packed)
        #expect(header.isPacked && header.msgid == 42 && header.traceID == 77 && header.frameCount == 1)
        #expect(Self.kinds(header, packed) == components.map { if case .port = $0 { 1 } else { 0 } })
        #expect(try Self.packedRecords(packed, header: header) == expected)
    }

    @Test("S-PORT-7: readPackedRecords refuses a record past the end, a missing record and bytes left over")
    func packedErrors() throws {
        func failure(_ frame: Data) -> WireFormat.DecodeError? {
            do {
                let bytes = Array(frame)
                _ = try Self.packedRecords(bytes, header: try Self.readHeader(bytes))
                return nil
            } catch {
                return error
            }
        }
        func isBadRecords(_ error: WireFormat.DecodeError?) -> Bool {
            if case .badPackedRecords? = error { true } else { false }
        }
        let x = Data("x".utf8)
        #expect(failure(RawWire.packed(msgid: 1, kinds: [0, 0], records: [x, x])) == nil)
        #expect(isBadRecords(failure(RawWire.packed(msgid: 1, kinds: [0, 0], records: [x]))))
        #expect(isBadRecords(failure(RawWire.packed(msgid: 1, kinds: [0], records: [x]) + [0])))
        #expect(isBadRecords(failure(RawWire.header(version: 2, msgid: 1, kinds: [0]) + RawWire.littleEndian(UInt32(2)) + x)))
        #expect(isBadRecords(failure(RawWire.header(version: 2, msgid: 1, kinds: [0]) + [2, 0, 0])))
        #expect(isBadRecords(failure(RawWire.header(version: 2, msgid: 1, kinds: [0]) + RawWire.littleEndian(UInt32.max))))
        // The reply flag adds a record.
        #expect(isBadRecords(failure(RawWire.packed(flags: 1, msgid: 1, kinds: [0], records: [x]))))
    }

    @Test("S-PORT-7: decodeDescriptor refuses each malformed descriptor with .badDescriptor")
    func descriptorErrors() {
        func descriptor(
            magic: [UInt8] = Array("RLKD".utf8), version: UInt8 = 1, transport: UInt8 = 1, pathLength: UInt16? = nil,
            pid: Int32 = 4242, path: [UInt8] = Array("/tmp/p.sock".utf8)
        ) -> [UInt8] {
            Array(RawWire.descriptor(magic: magic, version: version, transport: transport, pathLength: pathLength,
                                     pid: pid, startTime: 1, portID: 2, path: path))
        }
        #expect(Self.descriptorError(descriptor()) == nil)
        #expect(Self.descriptorError(descriptor(transport: 0, path: [])) == nil)
        let malformed: [(String, [UInt8])] = [
            ("empty", []),
            ("27 bytes", Array(descriptor(transport: 0, path: []).prefix(27))),
            ("wrong magic", descriptor(magic: Array("RLKP".utf8))),
            ("version 0", descriptor(version: 0)),
            ("version 2 with version 1's length", descriptor(version: 2)),
            ("version 3", descriptor(version: 3)),
            ("transport 2", descriptor(transport: 2)),
            ("transport 255", descriptor(transport: 255, path: [])),
            ("path length over the frame", descriptor(pathLength: 12)),
            ("path length under the frame", descriptor(pathLength: 10)),
            ("ipc with an empty path", descriptor(path: [])),
            ("ipc path of 108 bytes", descriptor(path: Array(("/" + String(repeating: "a", count: 107)).utf8))),
            ("relative path", descriptor(path: Array("tmp/p.sock".utf8))),
            ("path not UTF-8", descriptor(path: [0x2F, 0xC3])),
            ("path with a NUL", descriptor(path: Array("/tmp/\0.sock".utf8))),
            ("inproc with a path", descriptor(transport: 0)),
            ("pid 0", descriptor(pid: 0)),
            ("pid -1", descriptor(transport: 0, pid: -1, path: [])),
            ("pid Int32.min", descriptor(pid: .min)),
        ]
        for (name, bytes) in malformed {
            let error = Self.descriptorError(bytes)
            #expect(Self.isBadDescriptor(error), "\(name): \(String(describing: error))")
        }
        // The longest path allowed.
        #expect(Self.descriptorError(descriptor(path: Array(("/" + String(repeating: "a", count: 106)).utf8))) == nil)
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
        let decoded = try Self.decodeDescriptor(Self.exampleDescriptorV2)
        #expect(decoded == address && decoded.hostID == Self.exampleHost && decoded.ipcPath == address.ipcPath)
        // Version 1 is still read, and says nothing of the host.
        #expect(try Self.decodeDescriptor(Self.exampleFrames[2]).hostID == nil)
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
            let error = Self.descriptorError(bytes)
            #expect(Self.isBadDescriptor(error), "\(name): \(String(describing: error))")
        }
    }

    @Test("S-PORT-7: the errors only a whole message shows (frame count, frame size, total size) are the receiver's; every DecodeError says what was wrong")
    func everyDecodeErrorDescribesItself() {
        // frameCountMismatch, frameTooLarge and messageTooLarge come from the
        // receiver reading a whole message; PortMalformedInputTests sends them
        // to a port. Here: each case names its problem and its numbers.
        let cases: [(WireFormat.DecodeError, [String])] = [
            (.shortFrame("header (3 bytes)"), ["truncated", "3 bytes"]),
            (.badMagic, ["magic"]),
            (.unsupportedVersion(9), ["version 9"]),
            (.unknownFlags(0x80), ["flags", "0x80"]),
            (.unknownComponentKind(7), ["kind 7"]),
            (.tooManyComponents(300), ["300", "256"]),
            (.frameCountMismatch(expected: 3, got: 2), ["3", "2"]),
            (.frameTooLarge(WireFormat.maxFrameBytes + 1), ["\(WireFormat.maxFrameBytes + 1)", "\(WireFormat.maxFrameBytes)"]),
            (.messageTooLarge(WireFormat.maxMessageBytes + 1), ["\(WireFormat.maxMessageBytes + 1)", "\(WireFormat.maxMessageBytes)"]),
            (.badDescriptor("bad magic"), ["descriptor", "bad magic"]),
        ]
        for (error, words) in cases {
            for word in words { #expect(error.description.contains(word), "\(error.description) lacks \(word)") }
        }
        #expect(Set(cases.map(\.0.description)).count == cases.count)
    }

    @Test("S-PORT-2: the limits in code are the document's: 256 components, 64 MiB a frame, 256 MiB a message, 107-byte ipc paths, 12 + 28 byte fixed parts")
    func limitsMatchTheDocument() {
        #expect(WireFormat.maxComponents == 256)
        #expect(WireFormat.maxFrameBytes == 67_108_864)
        #expect(WireFormat.maxMessageBytes == 268_435_456)
        #expect(WireFormat.maxIPCPathBytes == 107)
        #expect(WireFormat.headerFixedSize == 12)
        #expect(WireFormat.descriptorFixedSize == 28)
        #expect(WireFormat.version == 1)
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
