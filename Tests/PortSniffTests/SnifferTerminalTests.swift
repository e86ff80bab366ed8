// portsniff's live view on a real terminal: a pseudo-terminal made by
// util-linux's `script`, sized with `stty`, replaying a recording. The
// screen must start with a header row and have no line wider than the
// terminal, in the narrow layout at 80 columns and the wide one at 160.
import Glibc
import Testing
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("portsniff on a terminal", .blocksThreads)
struct SnifferTerminalTests {
    static let ready = SpawnedProgram.isBuilt("portsniff") && access("/usr/bin/script", X_OK) == 0

    /// A recording of one event of each kind, with a long thread name and data heads.
    static func recording(in directory: String) throws -> String {
        let path = directory + "/screen.jsonl"
        let events = [PortTapEvent.Kind.send, .deliver, .sendFailed, .messageDropped].enumerated().map { index, kind in
            madeUpEvent(kind, seq: UInt64(index + 1), index: index, thread: "a-thread-with-a-long-name", source: "reply-4242",
                        destination: "service", msgid: UInt32(index), head: Array("hello, terminal!".utf8),
                        trace: kind == .send || kind == .deliver ? 0x1f : nil,
                        reason: kind == .sendFailed ? "timedOut" : kind == .messageDropped ? "no message handler" : nil)
        }
        try writeRecording(events, to: path, sorted: true)
        return path
    }

    /// The screen portsniff --read draws on a terminal `columns` wide:
    /// its lines, carriage returns removed.
    static func screen(columns: Int, arguments: [String], in directory: String) throws -> [String] {
        let command = "stty cols \(columns) rows 50; exec \(SpawnedProgram.productsDirectory)/portsniff \(arguments.joined(separator: " "))"
        let script = try SpawnedProgram(path: "/usr/bin/script", ["-q", "-e", "-c", command, "/dev/null"],
                                        environment: ["NO_COLOR": "1"], in: directory)
        #expect(script.waitForExit(timeout: 60) == 0, "\(script.output)\(script.errorOutput)")
        return script.output.replacingOccurrences(of: "\r", with: "").split(separator: "\n").map(String.init)
            .filter { !$0.hasPrefix("portsniff:") && !$0.hasPrefix("  ") }
    }

    @Test("portsniff's live view on an 80-column terminal: a header row, the narrow layout (milliseconds), no line wider than the terminal, --hex with the bytes as text",
          .enabled(if: ready, "needs portsniff built and util-linux's script"))
    func narrowTerminal() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let lines = try Self.screen(columns: 80, arguments: ["--read", try Self.recording(in: directory), "--hex", "16"], in: directory)
        #expect(lines.count == 5, "\(lines)")
        #expect(lines.first?.hasPrefix("TIME") == true && lines.first?.contains("PROCESS") == true && lines.first?.contains("EVENT") == true, "\(lines)")
        for line in lines { #expect(line.count <= 80, "\(line.count) columns: \(line)") }
        #expect(lines.dropFirst().allSatisfy { $0.range(of: #"^\d\d:\d\d:\d\d\.\d{3} "#, options: .regularExpression) != nil }, "\(lines)")
        #expect(lines.contains { $0.contains("SENDERR") } && lines.contains { $0.contains("DROPPED") })
        // What is cut is the least useful part: the latency keeps its unit,
        // a failure its whole reason, a long thread name its start and end.
        #expect(lines.contains { $0.contains("DELIVER") && $0.range(of: #"\d (ns|µs|ms)$"#, options: .regularExpression) != nil }, "\(lines)")
        #expect(lines.contains { $0.contains("SENDERR") && $0.hasSuffix("timedOut") }, "\(lines)")
        #expect(lines.contains { $0.contains("DROPPED") && $0.hasSuffix("no message handler") }, "\(lines)")
        #expect(lines.dropFirst().allSatisfy { $0.contains(" a-th…-name ") }, "\(lines)")
    }

    @Test("at 80 columns long port names are cut in their middle, and the bytes and the components give way before the names do",
          .enabled(if: ready, "needs portsniff built and util-linux's script"))
    func narrowTerminalCutsNamesInTheMiddle() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = directory + "/long-names.jsonl"
        let events = [PortTapEvent.Kind.send, .deliver].enumerated().map { index, kind in
            madeUpEvent(kind, seq: UInt64(index + 1), index: index, thread: "dispatch-user-initiated",
                        source: "reply-port-of-the-order-service-17", destination: "inventory-service-requests-2",
                        msgid: 7, head: Array("hello, terminal!".utf8), trace: 0x2a)
        }
        try writeRecording(events, to: path, sorted: true)
        let lines = try Self.screen(columns: 80, arguments: ["--read", path, "--hex", "16"], in: directory)
        #expect(lines.count == 3, "\(lines)")
        for line in lines { #expect(line.count <= 80, "\(line.count) columns: \(line)") }
        let deliver = lines.first { $0.contains("DELIVER") } ?? ""
        #expect(deliver.contains("disp…iated"), "a dispatch worker keeps its family and its quality of service: \(deliver)")
        #expect(deliver.range(of: #" rep[^ ]*…[^ ]*e-17 → inv[^ ]*…[^ ]*ts-2 #7 "#, options: .regularExpression) != nil, "both names keep their start and end, and the msgid: \(deliver)")
        #expect(!deliver.contains("|hello") && !deliver.contains("[1: 16B]"), "the bytes and components gave way first: \(deliver)")
        #expect(deliver.range(of: #"\d (ns|µs|ms)$"#, options: .regularExpression) != nil, "\(deliver)")
    }

    @Test("portsniff's live view on a 160-column terminal: the wide layout (microseconds), reasons and the bytes as text on the line",
          .enabled(if: ready, "needs portsniff built and util-linux's script"))
    func wideTerminal() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let lines = try Self.screen(columns: 160, arguments: ["--read", try Self.recording(in: directory), "--hex", "8"], in: directory)
        #expect(lines.count == 5, "\(lines)")
        for line in lines { #expect(line.count <= 160, "\(line.count) columns: \(line)") }
        #expect(lines.dropFirst().allSatisfy { $0.range(of: #"^\d\d:\d\d:\d\d\.\d{6} "#, options: .regularExpression) != nil }, "\(lines)")
        #expect(lines.contains { $0.contains("68656c6c6f2c2074 |hello, t|") }, "\(lines)")
        #expect(lines.contains { $0.contains("SENDERR") && $0.contains("timedOut") }, "\(lines)")
    }
}
