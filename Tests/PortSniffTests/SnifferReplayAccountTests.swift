// S-TAP-1 in replay: every view of portsniff --read reports the account a
// recording holds, whatever order its events show in. Recordings built here
// with a known account: numbers that interleave in time order (no drop),
// gaps (drops), a process whose account line says it owed events before and
// after those recorded, and a recording cut short in its last line.
import Glibc
import Testing
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("portsniff --read: every view adds up to the recording's account", .blocksThreads)
struct SnifferReplayAccountTests {
    static let ready = SpawnedProgram.isBuilt("portsniff")

    /// Process 4242 numbers 1 to 40, 11 to 15 missing (5 dropped), its
    /// events in time order with neighbours swapped (1, 3, 2, 5, 4, …: the
    /// order threads stamp and queue in); process 4343 numbers 3 to 22 of
    /// the 1 to 25 its account line says it owed (2 before, 3 after: 5
    /// dropped). 55 received, 10 dropped, 65 owed.
    static func recording(in directory: String, cutShort: Bool = false) throws -> String {
        let path = directory + (cutShort ? "/cut.jsonl" : "/account.jsonl")
        var numbers = Array(1...40).filter { !(11...15).contains($0) }
        for pair in stride(from: 1, to: numbers.count - 1, by: 2) { numbers.swapAt(pair, pair + 1) }
        var events = numbers.enumerated().map { index, seq in
            madeUpEvent(.send, seq: UInt64(seq), index: 2 * index, pid: 4242, thread: index % 2 == 0 ? "ping" : "pong",
                        destination: "svc", msgid: 1)
        }
        events += (3...22).map { seq in
            madeUpEvent(.deliver, seq: UInt64(seq), index: 2 * seq + 1, pid: 4343, thread: "main", destination: "other", msgid: 2)
        }
        events.sort { $0.monotonicTime < $1.monotonicTime }
        try writeRecording(events, to: path, sorted: true)
        var text = SpawnedProgram.read(path).replacingOccurrences(of: "\"version\":1,\"window_ms\"", with: "\"version\":2,\"window_ms\"")
        text += #"{"account":{"dropped":5,"exited":true,"first_owed":1,"last_owed":25,"name":"made-up","pid":4343,"received":20,"started_ticks":1}}"# + "\n"
        if cutShort {
            // The writer killed mid-line: the account line and the last event's end are gone.
            let lines = text.split(separator: "\n")
            text = lines.dropLast(2).joined(separator: "\n") + "\n" + lines[lines.count - 2].prefix(40)
        }
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = text.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        return path
    }

    static func run(_ arguments: [String], in directory: String) throws -> SpawnedProgram {
        let program = try SpawnedProgram("portsniff", arguments, in: directory)
        #expect(program.waitForExit(timeout: 60) == 0, "\(arguments): \(program.errorOutput)")
        return program
    }

    static let account = [
        "  10 tap event(s) dropped",
        "  pid 4242 (made-up): events 1-40 owed (40): 35 received + 5 dropped",
        "  pid 4343 (made-up, exited): events 1-25 owed (25): 20 received + 5 dropped",
        "  in all, 2 processes: 65 owed: 55 received + 10 dropped",
    ]

    @Test("S-TAP-1: the live lines, --json, --stats and --top of one recording report the same account, the recording's, with a warning line for each gap and none for numbers that interleave",
          .enabled(if: ready, "build the programs first: swift build (scripts/test.sh does)"))
    func everyViewAddsUp() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = try Self.recording(in: directory)
        for view in [[], ["--json"], ["--stats"], ["--top"]] {
            let read = try Self.run(["--read", path] + view, in: directory)
            let summary = read.errorOutput.split(separator: "\n").map(String.init)
            #expect(summary.first == "portsniff: 55 event(s) matched: 35 send(s), 20 deliver(ies), 0 paired", "\(view): \(summary)")
            #expect(Array(summary.dropFirst()) == Self.account, "\(view): \(summary)")
            for line in summary { #expect(line.count <= 80, "\(line.count) columns: \(line)") }
        }
        // One warning per gap, in the order of the numbers: 5 before 4242's
        // number 16, 2 before 4343's number 3; none for the swapped neighbours.
        let lines = try Self.run(["--read", path], in: directory).output.split(separator: "\n").filter { $0.hasPrefix("!!") }
        #expect(lines.count == 2, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("!! pid 4242 dropped 5 tap event(s)") } && lines.contains { $0.hasPrefix("!! pid 4343 dropped 2 tap event(s)") }, "\(lines)")
        // --stats: the tables' drops add up to the account's.
        let stats = try Self.run(["--read", path, "--stats"], in: directory).output.split(separator: "\n")
        let dropLines = stats.filter { $0.hasPrefix("tap events dropped: ") }
        let perTable = dropLines.compactMap { Int($0.dropFirst("tap events dropped: ".count).prefix { $0.isNumber }) }
        #expect(perTable.reduce(0, +) == 10 && dropLines.last?.hasSuffix(", 10 in all") == true, "\(dropLines)")
        for line in stats { #expect(line.count <= 80, "--stats is \(line.count) columns: \(line)") }
        // --top: each process's rows add up to its figures, which are what it
        // sent and what its numbers prove missed.
        let top = try Self.run(["--read", path, "--top"], in: directory).output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let processes = SnifferTopTests.table("PID", in: top)
        #expect(processes.map { [$0[0], $0[8], $0[9]] } == [["4242", "40", "5"], ["4343", "22", "2"]], "\(top)")
        let threads = SnifferTopTests.table("TID", in: top)
        let threadEvents = threads.filter { $0[2] == "(made-up)" }.map { Int($0[$0.count - 2].trimmingCharacters(in: ["~"])) ?? -1 }
        #expect(threadEvents.reduce(0, +) == 40 + 22, "\(threads)")
        #expect(top.contains("Sniffer: 55 received, 7 dropped (11.3%), 3 not yet received"), "\(top)")
    }

    @Test("S-TAP-1: filters apply to every line: --pid shows one process's warnings and account, none of the other's",
          .enabled(if: ready, "build the programs first: swift build (scripts/test.sh does)"))
    func filtersApplyToEveryLine() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let read = try Self.run(["--read", try Self.recording(in: directory), "--pid", "4242"], in: directory)
        let warnings = read.output.split(separator: "\n").filter { $0.hasPrefix("!!") }
        #expect(warnings.count == 1 && warnings.allSatisfy { $0.hasPrefix("!! pid 4242 ") }, "\(warnings)")
        #expect(!read.errorOutput.contains("4343"), "\(read.errorOutput)")
        #expect(read.errorOutput.contains("  5 tap event(s) dropped\n"), "\(read.errorOutput)")
    }

    @Test("a recording cut short in its last line reads up to the cut and says where; a directory is said to be one",
          .enabled(if: ready, "build the programs first: swift build (scripts/test.sh does)"))
    func cutShortAndDirectory() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let read = try Self.run(["--read", try Self.recording(in: directory, cutShort: true), "--json"], in: directory)
        #expect(decodeEvents(read.output).count == 54, "every whole event line, the cut one not")
        #expect(read.errorOutput.contains("is cut short: read up to its line 56 (byte "), "\(read.errorOutput)")
        // Without its account line, 4343 owes from its lowest number to its highest.
        #expect(read.errorOutput.contains("pid 4343 (made-up): events 3-22 owed (20): 20 received + 0 dropped"), "\(read.errorOutput)")
        let folder = try SpawnedProgram("portsniff", ["--read", directory], in: directory)
        #expect(folder.waitForExit(timeout: 30) != 0)
        #expect(folder.errorOutput.contains("\(directory) is a directory, not a recording"), "\(folder.errorOutput)")
    }
}
