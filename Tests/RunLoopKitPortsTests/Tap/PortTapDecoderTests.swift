// The tap's batch format read by the public decoder (docs/tap-format.md):
// batches written from the document's tables by a foreign writer
// (scripts/fuzz-seeds.py, whose seeds are in the fuzz corpus) decode to
// exactly the events they describe, and every malformed kind is refused
// with its typed error, changing nothing.
import Foundation
import Testing
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
import RunLoopKitTestSupport

@Suite("The tap's batch format and its decoder", .blocksThreads)
struct PortTapDecoderTests {
    /// A corpus input's batches: each as its frames (docs/fuzzing.md's input format).
    static func batches(_ seed: String) throws -> [[Data]] {
        let bytes = [UInt8](try Data(contentsOf: WireFuzzCorpusTests.corpus.appendingPathComponent(seed)))
        #expect(bytes.first == 2, "\(seed) is not a tap input")
        var offset = 1
        func u16() -> Int? {
            guard offset + 2 <= bytes.count else { return nil }
            defer { offset += 2 }
            return Int(bytes[offset]) | Int(bytes[offset + 1]) << 8
        }
        var batches: [[Data]] = []
        while let count = u16() {
            var frames: [Data] = []
            for _ in 0..<count {
                guard let length = u16() else { break }
                frames.append(Data(bytes[offset..<min(bytes.count, offset + (length & 0x7FFF))]))
                offset += length & 0x7FFF
            }
            batches.append(frames)
        }
        return batches
    }

    @Test("S-TAP-1: batches written from docs/tap-format.md by another writer decode to the events they describe: names from an earlier batch, the wall-clock time as monotonic time plus the anchor, the head, the reason")
    func foreignBatchesDecode() throws {
        var decoder = PortTapDecoder()
        let batches = try Self.batches("tap-valid")
        #expect(batches.count == 2)
        let first = try decoder.decode(batches[0])
        #expect(first.pid == 4242 && first.started == 987_654 && first.processName == "made-up" && first.produced == 10)
        #expect(first.events.count == 2)
        let send = first.events[0], deliver = first.events[1]
        #expect(send.kind == .send && send.seq == 1 && send.msgid == 7 && send.destination == "service" && send.source == nil)
        #expect(send.thread == "worker" && send.tid == 4243 && send.process == "made-up")
        #expect(send.monotonicTime == 5_000_001 && send.time == 1_700_000_000_000_000_000 + 5_000_001)
        #expect(send.head == Array("hello".utf8) && send.dataBytes == 5 && send.componentCount == 1 && send.trace == 0x1f)
        #expect(deliver.kind == .deliver && deliver.source == "reply")
        // The second batch announces nothing: the first's names serve it.
        let second = try decoder.decode(batches[1])
        #expect(second.events.map(\.kind) == [.sendFailed] && second.events[0].reason == "timedOut" && second.events[0].thread == "worker")
    }

    @Test("S-TAP-1, S-NET-1: a version-2 batch names a tcp port's remote peer (kind 5): the events to and from that port carry it, and version-1 batches still decode")
    func remotePeerNames() throws {
        var decoder = PortTapDecoder()
        let batch = try decoder.decode(try Self.batches("tap-v2-peer")[0])
        #expect(batch.events.count == 2)
        #expect(batch.events[0].destination == "service")
        #expect(batch.events[0].destinationPeer == "tcp://10.0.0.1:7400 instance 000102")
        #expect(batch.events[1].source == "reply" && batch.events[1].sourcePeer == nil)
        var old = PortTapDecoder()
        #expect(try old.decode(try Self.batches("tap-valid")[0]).events.allSatisfy { $0.destinationPeer == nil })
    }

    @Test("S-TAP-1, S-NET-1: a send right to a tcp port of another process is announced with its remote peer (a name of kind 5 with the port's id): its endpoint and instance; a port of this process has none")
    func tcpRightIsAnnouncedWithItsPeer() throws {
        let instance = ProcessInstance(high: 1, low: 2)
        let right = Port(sendRightTo: PortAddress(
            pid: 9, startTime: 1, portID: 4,
            route: .tcp(TCPTransport.Endpoint(instance: instance, listener: "tcp://10.9.9.9:7400", serverKey: nil))))
        let local = try Port(transport: .inproc)
        defer { local.invalidate() }
        let names = TapNames()
        let rightID = names.id(of: right)
        let localID = names.id(of: local)
        let (bytes, count) = names.encoded(from: 0)
        var entries: [(kind: UInt8, id: UInt32, name: String)] = []
        var offset = bytes.startIndex
        for _ in 0..<count {
            let length = Int(bytes[offset + 2]) | Int(bytes[offset + 3]) << 8
            let id = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + 4 + $1]) << (8 * $1) }
            entries.append((bytes[offset], id, String(decoding: bytes[(offset + 8)..<(offset + 8 + length)], as: UTF8.self)))
            offset += 8 + length
        }
        #expect(entries.contains { $0.kind == 5 && $0.id == rightID && $0.name == "tcp://10.9.9.9:7400 instance \(instance)" })
        #expect(!entries.contains { $0.kind == 5 && $0.id == localID })
        #expect(entries.filter { $0.kind == 1 }.count == 2)
    }

    @Test("S-TAP-1: a version-3 batch's records of 104 bytes say what an actor's message is to its call: the call sent and its reply delivered, with the call's id, the actor, the method (a label) and the reply's outcome; a message with role 0 is no actor's")
    func actorCallRecords() throws {
        var decoder = PortTapDecoder()
        let batch = try decoder.decode(try Self.batches("tap-v3-actor-call")[0])
        #expect(batch.events.count == 3)
        let call = batch.events[0], reply = batch.events[1], plain = batch.events[2]
        #expect(call.kind == .send && call.msgid == 0x5241_0001 && call.source == "reply")
        #expect(call.actorCall == PortTapEvent.ActorCall(role: .call, id: 17, actor: 3, method: "Greeter.greet(name:)"))
        #expect(reply.kind == .deliver && reply.destination == "reply")
        #expect(reply.actorCall == PortTapEvent.ActorCall(role: .reply, id: 17, actor: 3, method: "Greeter.greet(name:)", outcome: .value))
        #expect(plain.actorCall == nil && plain.head == Array("hello".utf8))
        // Versions 1 and 2 have no such fields: their records are 80 bytes.
        var old = PortTapDecoder()
        #expect(try old.decode(try Self.batches("tap-v2-peer")[0]).events.allSatisfy { $0.actorCall == nil })
        // A recording keeps it.
        let line = try JSONEncoder().encode(reply)
        #expect(try JSONDecoder().decode(PortTapEvent.self, from: line) == reply)
        #expect(String(decoding: line, as: UTF8.self).contains(#""actor_call":{"#))
    }

    @Test("S-TAP-1: a version-4 batch's records of 120 bytes carry the W3C trace id of a message sent in a trace, on its send and its delivery, as traceparent writes it; a message outside a trace has none, nor do records of earlier versions; a recording keeps it")
    func w3cTraceIDRecords() throws {
        var decoder = PortTapDecoder()
        let batch = try decoder.decode(try Self.batches("tap-v4-trace-context")[0])
        #expect(batch.events.count == 3)
        let send = batch.events[0], deliver = batch.events[1], untraced = batch.events[2]
        #expect(send.kind == .send && send.w3cTraceID == "4bf92f3577b34da6a3ce929d0e0e4736")
        #expect(deliver.kind == .deliver && deliver.source == "reply" && deliver.w3cTraceID == send.w3cTraceID)
        // Not the tap's own pairing id, which every message has.
        #expect(send.trace == 0x1f && untraced.trace == 0x1f && untraced.w3cTraceID == nil)
        #expect(send.actorCall == nil && send.head == Array("hello".utf8))
        var old = PortTapDecoder()
        #expect(try old.decode(try Self.batches("tap-v3-actor-call")[0]).events.allSatisfy { $0.w3cTraceID == nil })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let line = try encoder.encode(deliver)
        #expect(String(decoding: line, as: UTF8.self).contains(#""w3c_trace_id":"4bf92f3577b34da6a3ce929d0e0e4736""#))
        #expect(try JSONDecoder().decode(PortTapEvent.self, from: line) == deliver)
        #expect(!String(decoding: try encoder.encode(untraced), as: UTF8.self).contains("w3c_trace_id"))
        // A recorded id that is not one is refused.
        for bad in ["4BF92F3577B34DA6A3CE929D0E0E4736", "00000000000000000000000000000000", "4bf92f35"] {
            let text = String(decoding: line, as: UTF8.self).replacingOccurrences(of: "4bf92f3577b34da6a3ce929d0e0e4736", with: bad)
            #expect(throws: DecodingError.self, "\(bad)") { try JSONDecoder().decode(PortTapEvent.self, from: Data(text.utf8)) }
        }
    }

    @Test("S-TAP-1: every malformed batch is refused with its own typed error, and a refused batch's names are not kept")
    func malformedBatchesAreRefused() throws {
        let expected: [(String, PortTapFormatError)] = [
            ("tap-frame-count", .frameCount(1)),
            ("tap-short-header", .shortHeader(40)),
            ("tap-bad-magic", .badMagic),
            ("tap-unsupported-version", .unsupportedVersion(5)),
            ("tap-v3-short-record", .badRecordSize(80)),
            ("tap-v4-short-record", .badRecordSize(104)),
            ("tap-bad-actor-call", .badActorCall(role: 9, outcome: 0)),
            ("tap-v1-peer", .badName(offset: 0)),
            ("tap-bad-header-size", .badHeaderSize(200)),
            ("tap-bad-record-size", .badRecordSize(40)),
            ("tap-record-count-mismatch", .recordCountMismatch(records: 2, bytes: 80)),
            ("tap-bad-name", .badName(offset: 0)),
            ("tap-bad-kind", .badKind(9)),
            ("tap-bad-head-length", .badHeadLength(17)),
        ]
        for (seed, error) in expected {
            var decoder = PortTapDecoder()
            #expect(throws: error, "\(seed)") { try decoder.decode(try Self.batches(seed)[0]) }
        }
        // A batch that names a process and then fails on a record leaves no name behind.
        var decoder = PortTapDecoder()
        var batch = try Self.batches("tap-valid")[0]
        var records = [UInt8](batch[1])
        records[80 + 58] = 9  // the second record's kind
        batch[1] = Data(records)
        #expect(throws: PortTapFormatError.badKind(9)) { try decoder.decode(batch) }
        #expect(decoder.processName(pid: 4242, started: 987_654) == nil)
    }

    @Test("S-TAP-1: the recording format's event lines read back as written (trace ids past 2^53 as text), and a line of another version is refused")
    func recordsRoundTrip() throws {
        var event = PortTapEvent(
            kind: .deliver, seq: 12, pid: 7, started: 99, process: "p", monotonicTime: 5, time: 1_700_000_000_000_000_005,
            tid: 8, thread: "dispatch-default", destination: "a/b", source: "c", msgid: 3, componentCount: 2,
            portCount: 1, dataBytes: 4, head: [0, 1, 0xFE, 0xFF], trace: UInt64.max - 1, reason: nil, inPlace: true,
            destinationPeer: "tcp://10.0.0.1:7400 instance 00ff")
        event.latency = 1_500
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let line = String(decoding: try encoder.encode(event), as: UTF8.self)
        #expect(line.contains(#""trace":"fffffffffffffffe""#) && line.contains(#""head_hex":"0001feff""#) && line.contains(#""destination":"a/b""#))
        #expect(line.contains(#""latency_ns":1500"#) && line.contains(#""version":1"#))
        #expect(line.contains(#""destination_peer":"tcp://10.0.0.1:7400 instance 00ff""#))
        #expect(try JSONDecoder().decode(PortTapEvent.self, from: Data(line.utf8)) == event)
        let other = line.replacingOccurrences(of: #""version":1"#, with: #""version":2"#)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(PortTapEvent.self, from: Data(other.utf8)) }
    }
}
