// portsniff reading recordings (--read) and its command line: value
// names in --help, a file that is no recording, the drops a recording's
// numbers show, filters by glob and kind, and the -t family of stamps.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("portsniff: reading recordings", .blocksThreads)
struct SnifferReadTests {
    @Test("portsniff --help shows `--count <N>`: value names say what an option takes, not the property behind it",
          .enabled(if: SpawnedProgram.isBuilt("portsniff"), "build the programs first: swift build (scripts/test.sh does)"))
    func helpValueNames() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let help = try SpawnedProgram("portsniff", ["--help"], in: directory)
        #expect(help.waitForExit() == 0)
        // ArgumentParser puts the value name in angle brackets; without
        // `valueName:` it would print the property's name (`--count <count>`).
        #expect(help.output.contains("--count <N>"), "\(help.output)")
    }

    @Test("portsniff --read of a file that is not a recording fails with a clear error and a non-zero status",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func readingGarbageFails() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = "\(directory)/garbage.txt"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = "this is not a recording\n".withCString { write(fd, $0, strlen($0)) }
        close(fd)
        let read = try SpawnedProgram("portsniff", ["--read", path], in: directory)
        let status = read.waitForExit(timeout: 30)
        #expect(status != nil && status != 0)
        #expect(read.errorOutput.contains("\(path):1: not a portsniff recording"), "\(read.errorOutput)")
    }

    @Test("S-TAP-1: portsniff counts the events it missed from the gaps in each process's numbers: a recording with numbers 5, 6 and 9 of one process reads as 3 received + 2 dropped of 5 owed",
          .enabled(if: SpawnedProgram.isBuilt("portsniff"), "build the programs first: swift build (scripts/test.sh does)"))
    func gapsAreCountedAsDrops() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = "\(directory)/gaps.jsonl"
        try writeRecording([UInt64(5), 6, 9].enumerated().map { index, seq in
            madeUpEvent(.send, seq: seq, index: index, msgid: UInt32(index))
        }, to: path)
        let read = try SpawnedProgram("portsniff", ["--read", path], in: directory)
        #expect(read.waitForExit(timeout: 30) == 0)
        #expect(read.errorOutput.contains("3 event(s) matched") && read.errorOutput.contains("2 tap event(s) dropped"), "\(read.errorOutput)")
        #expect(read.errorOutput.contains("pid 4242 (made-up): events 5-9 owed (5): 3 received + 2 dropped"), "\(read.errorOutput)")
    }

    @Test("portsniff's filters take globs and negation on port, process and thread names, and --kind selects sends, deliveries, failed sends or drops (also negated)",
          .enabled(if: SpawnedProgram.isBuilt("portsniff"), "build the programs first: swift build (scripts/test.sh does)"))
    func globFiltersAndKinds() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = directory + "/filters.jsonl"
        try writeRecording([
            madeUpEvent(.send, seq: 1, index: 1, thread: "worker-1", destination: "service-4242", msgid: 1),
            madeUpEvent(.deliver, seq: 2, index: 2, thread: "worker-2", destination: "service-4242", msgid: 1),
            madeUpEvent(.send, seq: 3, index: 3, thread: "dispatch-default", destination: "logger", msgid: 2),
            madeUpEvent(.messageDropped, seq: 4, index: 4, thread: "worker-1", destination: "logger", msgid: 3, reason: "no message handler"),
        ], to: path, sorted: true)
        func msgids(_ arguments: [String]) throws -> [String] {
            let read = try SpawnedProgram("portsniff", ["--read", path, "--json"] + arguments, in: directory)
            #expect(read.waitForExit(timeout: 30) == 0, "\(read.errorOutput)")
            return decodeEvents(read.output).map { "\($0.kind) \($0.msgid)" }
        }
        #expect(try msgids(["--port", "service-*"]) == ["send 1", "deliver 1"])
        #expect(try msgids(["--port", "!service-*"]) == ["send 2", "messageDropped 3"])
        #expect(try msgids(["--thread", "worker-?"]) == ["send 1", "deliver 1", "messageDropped 3"])
        #expect(try msgids(["--thread", "worker-*", "--thread", "!worker-2"]) == ["send 1", "messageDropped 3"])
        #expect(try msgids(["--process", "made-*", "--kind", "send"]) == ["send 1", "send 2"])
        #expect(try msgids(["--kind", "!send"]) == ["deliver 1", "messageDropped 3"])
        #expect(try msgids(["--process", "other"]) == [])
        let bad = try SpawnedProgram("portsniff", ["--read", path, "--kind", "sent"], in: directory)
        #expect(bad.waitForExit(timeout: 30) != 0 && bad.errorOutput.contains("--kind takes"), "\(bad.errorOutput)")
        // The error lists exactly the kinds --help lists: every kind there is.
        let kinds = PortTapEvent.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        #expect(bad.errorOutput.contains("--kind takes \(kinds) (or ! and one), not sent"), "\(bad.errorOutput)")
        let help = try SpawnedProgram("portsniff", ["--help"], in: directory)
        #expect(help.waitForExit(timeout: 30) == 0)
        let flattened = help.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(flattened.contains("Only events of this kind: \(kinds);"), "\(help.output)")
    }

    @Test("portsniff --hex takes 0 to 16 and says so, for a value above 16 and for a negative one alike",
          .enabled(if: SpawnedProgram.isBuilt("portsniff"), "build the programs first: swift build (scripts/test.sh does)"))
    func hexBounds() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = directory + "/hex.jsonl"
        try writeRecording([madeUpEvent(.send, seq: 1, index: 1, msgid: 1, head: Array("hello, bounds!!!".utf8))], to: path, sorted: true)
        for value in ["99", "17", "-1"] {
            let bad = try SpawnedProgram("portsniff", ["--read", path, "--hex", value], in: directory)
            #expect(bad.waitForExit(timeout: 30) != 0, "--hex \(value) was accepted")
            #expect(bad.errorOutput.contains("--hex takes 0 to 16"), "--hex \(value): \(bad.errorOutput)")
            #expect(!bad.errorOutput.contains("Missing value"), "--hex \(value): \(bad.errorOutput)")
        }
        let good = try SpawnedProgram("portsniff", ["--read", path, "--hex", "16"], in: directory)
        #expect(good.waitForExit(timeout: 30) == 0, "\(good.errorOutput)")
        #expect(good.output.contains("68656c6c6f2c20626f756e6473212121 |hello, bounds!!!|"), "\(good.output)")
    }

    @Test("portsniff stamps lines as tcpdump's -t family: -t none, -tt seconds since 1970, -ttt the time since the previous line, -ttttt since the first (on the monotonic clock)",
          .enabled(if: SpawnedProgram.isBuilt("portsniff"), "build the programs first: swift build (scripts/test.sh does)"))
    func timestampFormats() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = directory + "/times.jsonl"
        // Events 1, 2 and 4 ms after a fixed instant.
        try writeRecording([1, 2, 4].enumerated().map { number, index in
            madeUpEvent(.send, seq: UInt64(number + 1), index: index, msgid: UInt32(number))
        }, to: path, sorted: true)
        func stamps(_ arguments: [String]) throws -> [String] {
            let read = try SpawnedProgram("portsniff", ["--read", path, "--no-color"] + arguments, in: directory)
            #expect(read.waitForExit(timeout: 30) == 0, "\(read.errorOutput)")
            return read.output.split(separator: "\n").map { String($0.split(separator: " ").first ?? "") }
        }
        #expect(try stamps(["-t"]) == ["4242", "4242", "4242"], "no time column: the pid comes first")
        #expect(try stamps(["-ttt"]) == ["0.000000", "0.001000", "0.002000"])
        #expect(try stamps(["-ttttt"]) == ["0.000000", "0.001000", "0.003000"])
        let epoch = try stamps(["--time", "epoch"])
        #expect(epoch.first == "1700001000.001000", "\(epoch)")
        let bad = try SpawnedProgram("portsniff", ["--read", path, "-t", "--time", "delta"], in: directory)
        #expect(bad.waitForExit(timeout: 30) != 0)
    }
}
