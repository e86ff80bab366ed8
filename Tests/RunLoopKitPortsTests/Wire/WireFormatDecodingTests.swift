// The bytes a PortMessage travels as (docs/wire-format.md), read back: round
// trips of headers, descriptors and packed frames (S-PORT-2), every decoding
// error (S-PORT-7), and the limits in code against the document's. The
// document's examples, byte for byte, are WireFormatTests'.
import Glibc
import Testing
import ZeroMQ
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("Wire format: round trips and decoding errors (docs/wire-format.md)", .blocksThreads)
struct WireFormatDecodingTests {
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

    @Test("S-PORT-9: a name file is one descriptor, or one descriptor and a 12-byte death mark (\"DIED\", the time as i64 little-endian); anything else after the descriptor is .badDescriptor", arguments: addresses)
    func nameFileWithAndWithoutDeathMark(address: PortAddress) throws {
        let descriptor = WireFormat.nameFileContents(for: address)
        func decode(_ bytes: [UInt8]) throws -> WireFormat.NameFile {
            try bytes.withUnsafeBytes { try WireFormat.decodeNameFile($0) }
        }
        #expect(try decode(descriptor) == WireFormat.NameFile(holder: address, diedAt: nil))
        let diedAt: Int64 = 1_795_000_000_123_456_789
        let mark = WireFormat.deathMark(diedAt: diedAt)
        #expect(mark == Array("DIED".utf8) + [0x15, 0x4D, 0x2F, 0x63, 0xFD, 0x1E, 0xE9, 0x18])
        #expect(try decode(descriptor + mark) == WireFormat.NameFile(holder: address, diedAt: diedAt))
        #expect(descriptor.count + mark.count <= WireFormat.maxNameFileBytes)
        let malformed: [(String, [UInt8])] = [
            ("a mark with another magic", descriptor + Array("DEAD".utf8) + mark.dropFirst(4)),
            ("a mark cut short", descriptor + mark.dropLast()),
            ("two marks", descriptor + mark + mark),
            ("a mark alone", mark),
        ]
        for (name, bytes) in malformed {
            #expect(throws: WireFormat.DecodeError.self, "\(name)") { try decode(bytes) }
        }
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
        #expect(Self.headerError(Array(RawWire.header(version: 4, msgid: 9))) == .unsupportedVersion(4))
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
