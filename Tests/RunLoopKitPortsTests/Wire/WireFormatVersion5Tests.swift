// Version 5, the compact form over tcp (docs/wire-format.md, "Version 5",
// "Reads frames"): checked against the document's examples byte for byte,
// written as a send writes it, read by both decoders as the version-3
// form of the same message is read, its varints at every
// width, and malformed frames refused under their reasons.
import Foundation
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
import Testing

@Suite("Wire format version 5: compact tcp messages (docs/wire-format.md)", .blocksThreads)
struct WireFormatVersion5Tests {
    typealias Example = WireFormatVersion3Tests

    static let target = WireFormat.Destination(instance: Example.destination, portID: 5)
    /// The welcome's home frame of the document's examples, and the home it reads as.
    static let homeFrame = WireFormat.encodeHome(pid: 4242, startTime: 987_654, listeners: WireFormatRelativeDescriptorTests.listenerHome)
    static let home = try! homeFrame.withUnsafeBytes { try WireFormat.decodeHome($0, of: Example.owner) }

    /// A varint as docs/wire-format.md says: 7 bits a byte, the lowest first.
    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        return bytes + [UInt8(value)]
    }

    /// A 16-byte version-4 descriptor in its short form: `04`, its position, its port id.
    static func short(_ relative: [UInt8]) -> [UInt8] {
        [4, relative[6]] + varint(relative.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) })
    }

    /// A version-5 frame built from the document's table (not from
    /// WireFormat's writer): the kinds written when a component is a port.
    static func compact(
        to destination: WireFormat.Destination = target, msgid: UInt32, kinds: [UInt8], traceID: UInt64? = nil, area: [UInt8]? = nil,
        records: [[UInt8]], replyPort: [UInt8]? = nil
    ) -> [UInt8] {
        let hasKinds = kinds.contains(WireFormat.kindPort)
        let flags: UInt8 = (replyPort == nil ? 0 : 1) | (traceID == nil ? 0 : 2) | (area == nil ? 0 : 8) | (hasKinds ? 16 : 0)
        var bytes = [5, flags] + WireFormat.instanceBytes(destination.instance) + varint(destination.portID) + varint(UInt64(msgid))
            + varint(UInt64(kinds.count)) + (hasKinds ? kinds : [])
        if let traceID { bytes += RawWire.littleEndian(traceID) }
        if let area { bytes += area }
        for record in records + (replyPort.map { [$0] } ?? []) { bytes += varint(UInt64(record.count)) + record }
        return bytes
    }

    /// `packed` as version 3 to `destination`, as a tcp send extends it.
    static func extended(_ packed: Data, to destination: WireFormat.Destination = target, trace: PortTraceContext? = nil) -> [UInt8] {
        let fields = WireFormat.ExtensionFields(destination: destination, trace: trace)
        var out = [UInt8](repeating: 0, count: packed.count + fields.areaSize)
        out.withUnsafeMutableBytes { buffer in
            packed.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: buffer[fields.areaSize...]).copyMemory(from: $0) }
            WireFormat.extendPacked(buffer, with: fields)
        }
        return out
    }

    /// A version-2 frame with a trace id after its kinds.
    static func packedTraced(flags: UInt8, msgid: UInt32, kinds: [UInt8], traceID: UInt64, records: [Data]) -> Data {
        var frame = RawWire.header(version: 2, flags: flags | WireFormat.flagHasTraceID, msgid: msgid, kinds: kinds)
        frame += RawWire.littleEndian(traceID)
        for record in records { frame += RawWire.littleEndian(UInt32(record.count)) + record }
        return frame
    }

    /// Runs `frames` (one message each) through both decoders, over a
    /// connection whose peer sent the examples' home frame (or none).
    static func decodeOverConnection(_ messages: [[UInt8]], withHome: Bool = true) -> WireFuzzing.Outcome {
        let input = WireFormatRelativeDescriptorTests.input(messages.map { [$0] }, home: withHome ? homeFrame : nil)
        return input.withUnsafeBytes { WireFuzzing.run($0) }
    }

    @Test("S-NET-1, S-NET-5: the document's reads frame and version-5 example are what RunLoopKit writes, byte for byte (the example as a send writes it, its 16-byte reply port made short), and read back to the destination, msgid and records, the short reply port naming the version-3 example's port")
    func documentExamples() throws {
        let reads = try #require(try WireFormatTests.documentExample(heading: "## Example, a reads frame").first)
        #expect(WireFormat.readsFrame == reads)
        #expect(try reads.withUnsafeBytes { try WireFormat.decodeReads($0) } == 5)

        let example = try #require(try WireFormatTests.documentExample(heading: "## Example, packed version 5 with a short version-4 reply port").first)
        let relative = try WireFormatRelativeDescriptorTests.relativeExample()
        #expect(Self.compact(msgid: 7, kinds: [0], records: [Array("hi".utf8)], replyPort: Self.short(relative)) == example)
        var written = [UInt8](repeating: 0, count: WireFormat.compactCapacity(packedSize: 13 + 4 + 2 + 4 + 16))
        let size = written.withUnsafeMutableBytes { buffer in
            Array("hi".utf8).withUnsafeBytes {
                WireFormat.writeCompact(into: buffer, to: Self.target, msgid: 7, bytes: $0, replyDescriptor: relative, traceID: nil)
            }
        }
        #expect(Array(written[..<size]) == example, "what a send writes, its 16-byte reply port made short")
        let packed = RawWire.packed(flags: 1, msgid: 7, kinds: [0], records: [Data("hi".utf8), Data(relative)])
        let version3 = try #require(try WireFormatTests.documentExample(heading: "## Example, packed version 3 with a version-4 reply port").first)
        #expect(Self.extended(packed) == version3, "the same message as the version-3 example")

        let header = try example.withUnsafeBytes { try WireFormat.readHeader($0) }
        #expect(header.isPacked && header.compactRecords && header.msgid == 7 && header.hasReplyPort && header.componentCount == 1)
        #expect(try example.withUnsafeBytes { try WireFormat.routedHeader($0).destination } == Self.target)
        let records = try WireFormatDecodingTests.packedRecords(example, header: header)
        #expect(records == [Array("hi".utf8), [4, 0, 3]])
        let named = try records[1].withUnsafeBytes { try WireFormat.decodeDescriptor($0, sender: Self.home) }
        #expect(named == Example.exampleAddress)
        let outcome = Self.decodeOverConnection([example])
        #expect(outcome.decodedMessages == 1 && outcome.refusedMessages == 0 && outcome.descriptorVersions == [3, 4], "\(outcome.errors)")
    }

    @Test("S-NET-5: both decoders read version 5 as they read version 3 of the same message: data of every length (a length varint of one, two and three bytes, empty), port components (a short version-4 one, one of a process that listens nowhere, a full version-3 one), a trace id, a trace context in the extension area, the largest msgid and port id")
    func decodersReadVersion5AsVersion3() throws {
        let relative = try WireFormatRelativeDescriptorTests.relativeExample()
        let nowhere = WireFormat.encodeRelativeDescriptor(portID: 300, listener: WireFormat.noListener)
        let full = try #require(try WireFormatTests.documentExample(heading: "## Example, a version-3 descriptor").first)
        let trace = try #require(PortTraceContext(traceIDHigh: 1, traceIDLow: 2, parentID: 3, flags: 1, traceState: "k=v"))
        let far = WireFormat.Destination(instance: Example.destination, portID: .max)
        /// W3C's binary traceparent and tracestate, as fields 2 and 3 (docs/wire-format.md).
        let traceArea = RawWire.extensionArea([
            (2, [0] + RawWire.littleEndian(UInt64(1).bigEndian) + RawWire.littleEndian(UInt64(2).bigEndian)
                + RawWire.littleEndian(UInt64(3).bigEndian) + [1]),
            (3, Array("k=v".utf8)),
        ])
        struct Shape {
            let what: String
            var destination = WireFormatVersion5Tests.target
            let msgid: UInt32
            let kinds: [UInt8]
            let records: [[UInt8]]
            var reply: [UInt8]?
            var traceID: UInt64?
            var trace: PortTraceContext?
        }
        let shapes = [
            Shape(what: "no component", msgid: 0, kinds: [], records: []),
            Shape(what: "data of 0, 127, 128 and 20,000 bytes", msgid: 128, kinds: [0, 0, 0, 0],
                  records: [[], Array(repeating: 1, count: 127), Array(repeating: 7, count: 128), Array(repeating: 9, count: 20_000)]),
            Shape(what: "port components and a reply port", destination: far, msgid: .max, kinds: [1, 0, 1, 1],
                  records: [relative, Array("x".utf8), nowhere, full], reply: relative),
            Shape(what: "a trace id", msgid: 9, kinds: [0], records: [Array("t".utf8)], traceID: 0xDEAD_BEEF),
            Shape(what: "a trace context", msgid: 16_384, kinds: [1], records: [full], reply: nowhere, trace: trace),
        ]
        for shape in shapes {
            let what = shape.what
            let packedRecords = shape.records.map { Data($0) } + (shape.reply.map { [Data($0)] } ?? [])
            let flags: UInt8 = shape.reply == nil ? 0 : 1
            let packed = shape.traceID.map { Self.packedTraced(flags: flags, msgid: shape.msgid, kinds: shape.kinds, traceID: $0, records: packedRecords) }
                ?? RawWire.packed(flags: flags, msgid: shape.msgid, kinds: shape.kinds, records: packedRecords)
            let version3 = Self.extended(packed, to: shape.destination, trace: shape.trace)
            let shortened = zip(shape.kinds, shape.records).map { kind, record in
                kind == WireFormat.kindPort && record.count == 16 && record[4] == 4 ? Self.short(record) : record
            }
            let compact = Self.compact(
                to: shape.destination, msgid: shape.msgid, kinds: shape.kinds, traceID: shape.traceID,
                area: shape.trace == nil ? nil : traceArea, records: shortened,
                replyPort: shape.reply.map { $0.count == 16 ? Self.short($0) : $0 })
            let context = shape.trace
            #expect(compact[0] == WireFormat.compactVersion, "\(what)")
            let outcome = Self.decodeOverConnection([compact, version3, compact])
            #expect(outcome.decodedMessages == 3 && outcome.refusedMessages == 0, "\(what): \(outcome.errors)")

            let (header, routed) = try compact.withUnsafeBytes { try WireFormat.routedHeader($0) }
            let header3 = try version3.withUnsafeBytes { try WireFormat.readHeader($0) }
            #expect(routed == shape.destination, "\(what)")
            #expect(header.msgid == header3.msgid && header.componentCount == header3.componentCount && header.traceID == header3.traceID
                    && header.hasReplyPort == header3.hasReplyPort && header.hasTraceContext == header3.hasTraceContext, "\(what)")
            let kinds = compact.withUnsafeBytes { header.kinds(in: $0) }
            #expect(kinds == version3.withUnsafeBytes { header3.kinds(in: $0) }, "\(what)")
            #expect(compact.withUnsafeBytes { WireFormat.traceContext(ofHeader: $0) } == context, "\(what)")
            let records = try WireFormatDecodingTests.packedRecords(compact, header: header)
            let records3 = try WireFormatDecodingTests.packedRecords(version3, header: header3)
            #expect(records.count == records3.count, "\(what)")
            for (index, (record, record3)) in zip(records, records3).enumerated() {
                let isPort = index == header.componentCount || kinds[index] == WireFormat.kindPort
                guard isPort else {
                    #expect(record == record3, "\(what): record \(index)")
                    continue
                }
                let short = try record.withUnsafeBytes { try WireFormat.decodeDescriptor($0, sender: Self.home) }
                let long = try record3.withUnsafeBytes { try WireFormat.decodeDescriptor($0, sender: Self.home) }
                #expect(short == long, "\(what): port record \(index)")
                #expect(record.count < record3.count || record == record3, "\(what): a version-4 descriptor goes short, any other as it is")
            }
        }
    }

    @Test("S-NET-5: a varint reads back at every width, the largest 64-bit value in ten bytes; one cut short or past 64 bits is refused")
    func varints() {
        for value: UInt64 in [0, 1, 127, 128, 300, 16_383, 16_384, UInt64(UInt32.max), 1 << 62, .max] {
            var bytes = [UInt8](repeating: 0xAA, count: 12)
            let end = bytes.withUnsafeMutableBytes { WireFormat.writeVarint(value, into: $0, at: 1) }
            #expect(end - 1 == WireFormat.varintSize(value), "\(value)")
            var offset = 1
            #expect(bytes.withUnsafeBytes { WireFormat.readVarint($0, at: &offset) } == value)
            #expect(offset == end)
        }
        #expect(WireFormat.varintSize(.max) == 10)
        let refused: [[UInt8]] = [[], [0x80], [0xFF, 0xFF], Array(repeating: 0xFF, count: 9) + [0x02], Array(repeating: 0x80, count: 11) + [0]]
        for bytes in refused {
            var offset = 0
            #expect(bytes.withUnsafeBytes { WireFormat.readVarint($0, at: &offset) } == nil, "\(bytes)")
        }
    }

    @Test("S-PORT-7, S-NET-5: malformed version-5 frames are refused by both decoders under their reasons, and a reads frame that is not one is refused")
    func malformedFramesAreRefused() throws {
        let instance = WireFormat.instanceBytes(Example.destination)
        func frame(_ flags: UInt8, _ rest: [UInt8]) -> [UInt8] { [5, flags] + instance + rest }
        let cases: [(String, [UInt8], String)] = [
            ("an unknown flag (bit 2, multipart)", frame(0b100, [5, 7, 1, 2, 0x68, 0x69]), "unknownFlags"),
            ("cut inside the port id's varint", frame(0, [0x85]), "shortFrame"),
            ("a port id of eleven bytes", frame(0, Array(repeating: 0xFF, count: 10) + [0x01, 7, 0]), "shortFrame"),
            ("a msgid over 32 bits", frame(0, [5, 0x80, 0x80, 0x80, 0x80, 0x10, 0]), "shortFrame"),
            ("257 components", frame(0, [5, 7, 0x81, 0x02]), "tooManyComponents"),
            ("a kind of 2", frame(WireFormat.flagHasKinds, [5, 7, 1, 2, 0]), "unknownComponentKind"),
            ("a trace id cut short", frame(WireFormat.flagHasTraceID, [5, 7, 0, 1, 2, 3]), "shortFrame"),
            ("a destination field in the area", frame(WireFormat.flagHasExtensionArea, [5, 7, 0] + RawWire.extensionArea([(1, Array(repeating: 0, count: 24))])),
             "badExtension"),
            ("a record past the frame", frame(0, [5, 7, 1, 100, 0x68]), "badPackedRecords"),
            ("a record length past 64 MiB", frame(0, [5, 7, 1, 0x80, 0x80, 0x80, 0x40]), "badPackedRecords"),
            ("a byte after the last record", frame(0, [5, 7, 1, 1, 0x68, 0]), "badPackedRecords"),
            // 0x85 0x01 is 133, and 132 bytes follow; its first byte alone reads as the 133 after it.
            ("a two-byte length one past the frame", frame(0, [5, 7, 1, 0x85, 0x01] + Array(repeating: 0x68, count: 132)), "badPackedRecords"),
            ("a record missing", frame(WireFormat.flagHasReplyPort, [5, 7, 1, 1, 0x68]), "badPackedRecords"),
            ("a short descriptor with a byte after its port id", frame(WireFormat.flagHasReplyPort, [5, 7, 0, 4, 4, 0, 3, 0]), "badDescriptor"),
            ("a short descriptor naming an endpoint the home lacks", frame(WireFormat.flagHasReplyPort, [5, 7, 0, 3, 4, 1, 3]), "badDescriptor"),
        ]
        for (what, bytes, reason) in cases {
            let outcome = Self.decodeOverConnection([bytes])
            #expect(outcome.decodedMessages == 0 && outcome.refusedMessages == 1 && outcome.errors == [reason], "\(what): \(outcome.errors)")
        }
        // A short descriptor where no home came first (inproc, ipc, or a peer that sent none).
        let example = try #require(try WireFormatTests.documentExample(heading: "## Example, packed version 5 with a short version-4 reply port").first)
        let noHome = Self.decodeOverConnection([example], withHome: false)
        #expect(noHome.refusedMessages == 1 && noHome.errors == ["badDescriptor"])
        // Version 5 is one frame: a second makes it malformed.
        let twoFrames = WireFormatRelativeDescriptorTests.input([[example, [0]]], home: Self.homeFrame).withUnsafeBytes { WireFuzzing.run($0) }
        #expect(twoFrames.refusedMessages == 1 && twoFrames.errors == ["frameCountMismatch"])

        let reads = WireFormat.readsFrame
        for bad in [Array(reads.dropLast()), reads + [0], Array(reads[..<5]) + [3, 5], [0x52, 0x4C, 0x4B, 0x43, 2, 4, 5]] {
            #expect(throws: WireFormat.DecodeError.self, "\(bad)") { try bad.withUnsafeBytes { try WireFormat.decodeReads($0) } }
        }
    }
}
