// portsniff with a traced program: a message sent inside a
// swift-distributed-tracing span carries its W3C trace context, and the
// tap's records carry its trace id (docs/tap-format.md, "Trace context"):
// portsniff shows it, records it, and keeps one trace's events with
// --trace-id. The program is the tracing tests' peer, `rlk-trace-peer
// request`, run under portsniff.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("portsniff: W3C trace context", .blocksThreads)
struct SnifferTraceContextTests {
    static let built = SpawnedProgram.isBuilt("portsniff") && SpawnedProgram.isBuilt("rlk-trace-peer")

    @Test("S-TAP-1: portsniff shows the W3C trace id of a message sent in a trace, on its send and delivery and on its answer sent from the handler's span, and none on a message sent outside any trace; --json records it; --trace-id keeps only that trace's events",
          .enabled(if: built, "build the programs first: swift build --build-tests (scripts/test.sh does)"))
    func showsTheTraceID() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let program = SpawnedProgram.productsDirectory + "/rlk-trace-peer"

        let recording = directory + "/run.jsonl"
        let recorded = try SpawnedProgram("portsniff", ["--json", "--write", recording, "--", program, "request"], environment: runtime, in: directory)
        #expect(recorded.waitForExit(timeout: 60) == 0, "\(recorded.errorOutput)")
        let traceID = try #require(Self.traceID(in: recorded.output), "\(recorded.output)")
        let events = decodeEvents(recorded.output).filter { $0.kind == .send || $0.kind == .deliver }
        // The request and the handler's answer from its span: sent and delivered, all in the trace.
        let traced = events.filter { $0.msgid == 7 || ($0.msgid == 2 && $0.dataBytes == "traced".utf8.count) }
        #expect(traced.map(\.kind).filter { $0 == .send }.count == 2 && traced.count == 4, "\(events)")
        #expect(traced.allSatisfy { $0.w3cTraceID == traceID }, "\(traced.map { ($0.msgid, $0.w3cTraceID ?? "none") })")
        // Outside any span: the message and its answer carry none.
        let plain = events.filter { $0.msgid == 8 || ($0.msgid == 2 && $0.dataBytes == "plain".utf8.count) }
        #expect(plain.count == 4 && plain.allSatisfy { $0.w3cTraceID == nil }, "\(plain.map { ($0.msgid, $0.w3cTraceID ?? "none") })")
        // Not the tap's pairing id: each message has its own of those.
        #expect(Set(traced.compactMap(\.trace)).count == 2)

        // --trace-id with the id's first digits, over the recording: that trace's four events, nothing else.
        let filtered = try SpawnedProgram("portsniff", ["--read", recording, "--json", "--trace-id", String(traceID.prefix(8))], in: directory)
        #expect(filtered.waitForExit(timeout: 30) == 0, "\(filtered.errorOutput)")
        let kept = decodeEvents(filtered.output)
        #expect(kept.count == 4 && Set(kept.map(\.seq)) == Set(traced.map(\.seq)), "\(kept)")
        let other = try SpawnedProgram("portsniff", ["--read", recording, "--json", "--trace-id", traceID.hasPrefix("0") ? "1" : "0"], in: directory)
        #expect(other.waitForExit(timeout: 30) == 0 && decodeEvents(other.output).isEmpty, "\(other.output)")
        let bad = try SpawnedProgram("portsniff", ["--read", recording, "--trace-id", "xyz"], in: directory)
        #expect(bad.waitForExit(timeout: 30) != 0 && bad.errorOutput.contains("--trace-id takes a W3C trace id"), "\(bad.errorOutput)")

        // Live (a pipe: whole lines), each traced message's line names its trace.
        let live = try SpawnedProgram("portsniff", ["--", program, "request"], environment: runtime, in: directory)
        #expect(live.waitForExit(timeout: 60) == 0, "\(live.errorOutput)")
        let liveTrace = try #require(Self.traceID(in: live.output), "\(live.output)")
        let lines = live.output.split(separator: "\n").filter { $0.contains("SEND") || $0.contains("DELIVER") }
        #expect(lines.filter { $0.contains("trace \(liveTrace)") }.count == 4, "\(live.output)")
        #expect(lines.filter { $0.contains("msgid 8") }.count == 2, "\(live.output)")
        #expect(lines.filter { $0.contains("msgid 8") }.allSatisfy { !$0.contains("trace ") }, "\(live.output)")
    }

    /// The trace id `rlk-trace-peer request` printed.
    static func traceID(in output: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix("TRACE ") }.map { String($0.dropFirst("TRACE ".count)) }
    }
}
