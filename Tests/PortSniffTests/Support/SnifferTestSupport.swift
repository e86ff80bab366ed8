// Helpers for portsniff's tests: decoding its JSON events, writing the
// recordings it reads, and whether the programs the tests run are built
// (SpawnedProgram and makeTemporaryDirectory, in RunLoopKitTestSupport, run
// them).
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

/// portsniff and the demos it watches are built (`swift build`, which
/// scripts/test.sh runs before the tests).
let programsBuilt = SpawnedProgram.isBuilt("portsniff") && SpawnedProgram.isBuilt("pingpong") && SpawnedProgram.isBuilt("ipc-demo")

/// Decodes portsniff --json output, one event per line (the header line,
/// which is no event, is skipped).
func decodeEvents(_ text: String) -> [PortTapEvent] {
    let decoder = JSONDecoder()
    return text.split(separator: "\n").compactMap { try? decoder.decode(PortTapEvent.self, from: Data($0.utf8)) }
}

/// Writes `events` as a portsniff recording at `path`: the header line,
/// then one event a line (`sorted` says whether they are in time order).
func writeRecording(_ events: [PortTapEvent], to path: String, sorted: Bool = false) throws {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    var text = "{\"format\":\"portsniff-recording\",\"sorted\":\(sorted),\"version\":1,\"window_ms\":\(sorted ? 50 : 0)}\n"
    for event in events { text += String(decoding: try encoder.encode(event), as: UTF8.self) + "\n" }
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    _ = text.withCString { write(fd, $0, strlen($0)) }
    close(fd)
}

/// An event for a made-up recording: `index` milliseconds after a fixed instant.
func madeUpEvent(
    _ kind: PortTapEvent.Kind, seq: UInt64, index: Int, pid: Int32 = 4242, thread: String = "main",
    source: String? = nil, destination: String = "4242/1", msgid: UInt32 = 0, head: [UInt8] = [], trace: UInt64? = nil,
    reason: String? = nil
) -> PortTapEvent {
    let monotonic = 1_000_000_000_000 + Int64(index) * 1_000_000
    return PortTapEvent(
        kind: kind, seq: seq, pid: pid, started: 1, process: "made-up", monotonicTime: monotonic,
        time: 1_700_000_000_000_000_000 + monotonic, tid: pid, thread: thread, destination: destination, source: source,
        msgid: msgid, componentCount: head.isEmpty ? 0 : 1, dataBytes: head.count, head: head, trace: trace, reason: reason)
}
