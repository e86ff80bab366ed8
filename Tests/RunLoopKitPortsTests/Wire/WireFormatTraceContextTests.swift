// The trace context of version 3 (docs/wire-format.md, "Trace context"):
// fields 2 and 3 of the extension area, checked against the document's
// example byte for byte, read by both decoders alike, malformed ones
// refused; and W3C's `traceparent` text, parsed and written.
import RunLoopKit
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Wire format: the trace context of version 3 (docs/wire-format.md)", .blocksThreads)
struct WireFormatTraceContextTests {
    /// W3C's own example, as the document's.
    static let trace = PortTraceContext(traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", tracestate: "congo=t61rcWkgMzE")!

    /// The fields of `trace`, as a receiver reads them.
    static var traceFields: [(type: UInt16, bytes: [UInt8])] {
        [(2, [0] + hexBytes("0af7651916cd43dd8448eb211c80319c") + hexBytes("b7ad6b7169203331") + [1]), (3, Array("congo=t61rcWkgMzE".utf8))]
    }

    @Test("the document's example is what a traced message is written as (the send path's extension of a packed frame), byte for byte, and reads back to its context and record")
    func documentExample() throws {
        let example = try #require(try WireFormatTests.documentExample(heading: "## Example, packed version 3 with a trace context").first)
        var message = PortMessage(msgid: 7, components: [.data(Data("hi".utf8))])
        message.traceBox = TraceContextBox(Self.trace)
        #expect(try message.wireFrames() == [example])
        let header = try example.withUnsafeBytes { try WireFormat.readHeader($0) }
        #expect(header.isPacked && header.msgid == 7 && header.hasTraceContext && !header.hasReplyPort)
        #expect(example.withUnsafeBytes { WireFormat.traceContext(ofHeader: $0) } == Self.trace)
        #expect(try example.withUnsafeBytes { try WireFormat.routedHeader($0).destination } == nil)
        #expect(try WireFormatDecodingTests.packedRecords(example, header: header) == [Array("hi".utf8)])
    }

    @Test("both decoders read a trace context, packed and multipart, with and without a trace state and beside a destination, and agree")
    func decodersAgree() throws {
        let destination = (type: UInt16(1), bytes: RawWire.destination(high: 1, low: 2, portID: 3))
        let areas = [Self.traceFields, [Self.traceFields[0]], [destination] + Self.traceFields, [(9, [1, 2])] + Self.traceFields]
        for fields in areas {
            let area = RawWire.extensionArea(fields)
            let packed = [Array(RawWire.packedV3(msgid: 7, kinds: [0], extensionArea: area, records: [Data("hi".utf8)]))]
            let multipart = [Array(RawWire.header(version: 3, flags: 0b100, msgid: 7, kinds: [0])) + area, Array("hi".utf8)]
            for frames in [packed, multipart] {
                let outcome = Self.run(frames)
                #expect(outcome.decodedMessages == 1 && outcome.refusedMessages == 0, "\(fields.map(\.type)): \(outcome.errors)")
            }
        }
    }

    @Test("a malformed trace context is badExtension to both decoders: a field of the wrong size, two of a kind, a trace state alone, empty, too long or not UTF-8, ids of zeros, version 255")
    func malformedRefused() {
        let parent = Self.traceFields[0]
        var zeroTrace = parent.bytes
        for index in 1...16 { zeroTrace[index] = 0 }
        var zeroParent = parent.bytes
        for index in 17...24 { zeroParent[index] = 0 }
        var version255 = parent.bytes
        version255[0] = 0xFF
        let cases: [[(type: UInt16, bytes: [UInt8])]] = [
            [(2, Array(parent.bytes.dropLast()))],
            [parent, parent],
            [(3, Array("a=b".utf8))],
            [parent, (3, [])],
            [parent, (3, [UInt8](repeating: 0x61, count: 513))],
            [parent, (3, [0xFF, 0xFE])],
            [parent, (3, Array("a=b".utf8)), (3, Array("c=d".utf8))],
            [(2, zeroTrace)],
            [(2, zeroParent)],
            [(2, version255)],
        ]
        for fields in cases {
            let area = RawWire.extensionArea(fields)
            let outcome = Self.run([Array(RawWire.packedV3(msgid: 7, kinds: [0], extensionArea: area, records: [Data("hi".utf8)]))])
            #expect(outcome.refusedMessages == 1 && outcome.errors == ["badExtension"], "\(fields.map { ($0.type, $0.bytes.count) }): \(outcome.errors)")
        }
    }

    @Test("traceparent text: W3C's examples parse and are written back the same; invalid ones (uppercase, ids of zeros, version ff, wrong lengths, extra fields in version 00) do not parse")
    func traceparentText() throws {
        let parsed = try #require(PortTraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
        #expect(parsed.traceID == "4bf92f3577b34da6a3ce929d0e0e4736" && parsed.parentID == 0x00F0_67AA_0BA9_02B7 && parsed.isSampled)
        #expect(parsed.traceparent == "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" && parsed.traceState == nil)
        #expect(PortTraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00")?.isSampled == false)
        // A later version's value is read for the fields version 00 has.
        #expect(PortTraceContext(traceparent: "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later")?.traceID == parsed.traceID)
        for invalid in [
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x",
            "", "00", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-1",
        ] {
            #expect(PortTraceContext(traceparent: invalid) == nil, "\(invalid)")
        }
        #expect(PortTraceContext(traceparent: parsed.traceparent, tracestate: String(repeating: "a", count: 513)) == nil)
    }

    /// The frames as one fuzzer input: both decoders, compared.
    private static func run(_ frames: [[UInt8]]) -> WireFuzzing.Outcome {
        var input: [UInt8] = [0] + RawWire.littleEndian(UInt16(frames.count))
        for frame in frames { input += RawWire.littleEndian(UInt16(frame.count)) + frame }
        return input.withUnsafeBytes { WireFuzzing.run($0) }
    }

    private static func hexBytes(_ text: String) -> [UInt8] {
        stride(from: 0, to: text.count, by: 2).map { offset in
            let start = text.index(text.startIndex, offsetBy: offset)
            return UInt8(text[start..<text.index(start, offsetBy: 2)], radix: 16)!
        }
    }
}
