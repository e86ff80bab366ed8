// portsniff --top: plain tables per recorded second when replaying into a
// pipe (rows, rates, the `~` estimates, no escape codes), and the
// full-screen view on a pseudo-terminal made by util-linux's `script`:
// the alternate screen entered and left, every line within the terminal,
// the terminal's modes restored, and keys that change the table and quit.
import Dispatch
import Glibc
import RunLoopKit
import Testing
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("portsniff's top view", .blocksThreads)
struct SnifferTopTests {
    static let ready = SpawnedProgram.isBuilt("portsniff") && SpawnedProgram.isBuilt("pingpong")
        && access("/usr/bin/script", X_OK) == 0 && access("/usr/bin/nice", X_OK) == 0

    static let enterScreen = "\u{1B}[?1049h"
    static let leaveScreen = "\u{1B}[?1049l"
    /// Every draw starts at the top left corner.
    static let home = "\u{1B}[H"

    // MARK: - Replay into a pipe

    /// Two recorded seconds. Process 4242 (made-up) sends on thread ping to
    /// port svc and delivers on thread pong, 1 ms later for half of the
    /// messages and 3 ms for the others in the first second; in the second,
    /// every other message (both its events) is missing from the numbers:
    /// 40 events owed, 20 received. Process 5151 (other) sends five
    /// messages to 5151/1 each second, none missed.
    static func recording(in directory: String) throws -> String {
        func event(_ kind: PortTapEvent.Kind, seq: UInt64, millisecond: Int, thread: String, tid: Int32, trace: UInt64) -> PortTapEvent {
            var event = madeUpEvent(kind, seq: seq, index: millisecond, thread: thread, destination: "svc", msgid: 1, trace: trace)
            event.tid = tid
            event.dataBytes = 64
            return event
        }
        func other(seq: UInt64, millisecond: Int) -> PortTapEvent {
            var event = madeUpEvent(.send, seq: seq, index: millisecond, pid: 5151, destination: "5151/1", msgid: 2, trace: 10_000 + seq)
            event.process = "other"
            event.dataBytes = 64
            return event
        }
        var events: [PortTapEvent] = []
        for message in 0..<10 {
            events.append(event(.send, seq: UInt64(2 * message + 1), millisecond: 10 * message, thread: "ping", tid: 4243, trace: UInt64(message + 1)))
            events.append(event(.deliver, seq: UInt64(2 * message + 2), millisecond: 10 * message + (message < 5 ? 1 : 3),
                                thread: "pong", tid: 4244, trace: UInt64(message + 1)))
        }
        for message in stride(from: 11, to: 30, by: 2) {
            let millisecond = 1_000 + 10 * (message - 10)
            events.append(event(.send, seq: UInt64(2 * message + 1), millisecond: millisecond, thread: "ping", tid: 4243, trace: UInt64(message + 1)))
            events.append(event(.deliver, seq: UInt64(2 * message + 2), millisecond: millisecond + 1, thread: "pong", tid: 4244, trace: UInt64(message + 1)))
        }
        for index in 0..<5 {
            events.append(other(seq: UInt64(index + 1), millisecond: 200 + index))
            events.append(other(seq: UInt64(index + 6), millisecond: 1_300 + index))
        }
        let path = directory + "/top.jsonl"
        try writeRecording(events.sorted { $0.monotonicTime < $1.monotonicTime }, to: path, sorted: true)
        return path
    }

    /// The rows of the table whose title row starts with `title`, each split
    /// into its cells, in `lines` (one second's tables).
    static func table(_ title: String, in lines: [String]) -> [[String]] {
        guard let start = lines.firstIndex(where: { $0.split(separator: " ").prefix(2).contains { $0.hasPrefix(title) } }) else { return [] }
        return lines[(start + 1)...].prefix { !$0.isEmpty && !$0.hasPrefix("~") }.map { $0.split(separator: " ").map(String.init) }
    }

    @Test("portsniff --top --read into a pipe prints plain tables per recorded second: ports, processes and threads with rates, latency percentiles and totals; missed events counted exactly per process and estimated (~) per port and thread; no escape codes",
          .enabled(if: ready, "needs portsniff and pingpong built, util-linux's script and nice"))
    func replayedIntoAPipe() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let sniff = try SpawnedProgram("portsniff", ["--top", "--read", try Self.recording(in: directory)], in: directory)
        #expect(sniff.waitForExit(timeout: 60) == 0, "\(sniff.errorOutput)")
        let output = sniff.output
        #expect(!output.contains("\u{1B}"), "escape codes in a pipe: \(output.debugDescription)")
        let lines = output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let starts = lines.indices.filter { lines[$0].hasPrefix("portsniff --top - ") }
        try #require(starts.count == 2, "one table a recorded second: \(output)")
        // As `top -b`: a blank line between two seconds' tables.
        #expect(lines[starts[1] - 1].isEmpty)
        let first = Array(lines[starts[0]..<starts[1]]), second = Array(lines[starts[1]...])

        // The first second: nothing missed, nothing estimated.
        #expect(first[1] == "Rates:   25 events/s, 15 messages/s, 0 drops/s", "\(first)")
        #expect(Self.table("PORT", in: first) == [
            ["svc", "20", "10", "640", "0", "1.0ms", "3.0ms", "20", "0"],
            ["5151/1", "5", "5", "320", "0", "-", "-", "5", "0"],
        ], "\(first)")
        #expect(!first.contains { $0.contains("~") }, "\(first)")

        // The second: process 4242 owed 40 events and 20 came; its rate
        // counts them, exactly, and its port's and threads' are estimated.
        #expect(second[1] == "Rates:   45 events/s, 15 messages/s, 20 drops/s", "\(second)")
        #expect(second[2] == "Sniffer: 50 received, 20 dropped (28.6%)", "\(second)")
        #expect(Self.table("PORT", in: second) == [
            ["svc", "~40", "10", "640", "~20", "1.0ms", "1.0ms", "~60", "~20"],
            ["5151/1", "5", "5", "320", "0", "-", "-", "10", "0"],
        ], "\(second)")
        #expect(Self.table("PID", in: second) == [
            ["4242", "made-up", "40", "10", "640", "20", "1.0ms", "1.0ms", "60", "20"],
            ["5151", "other", "5", "5", "320", "0", "-", "-", "10", "0"],
        ], "\(second)")
        #expect(Self.table("TID", in: second) == [
            ["4243", "ping", "(made-up)", "~20", "10", "640", "~10", "-", "-", "~30", "~10"],
            ["4244", "pong", "(made-up)", "~20", "10", "640", "~10", "1.0ms", "1.0ms", "~30", "~10"],
            ["5151", "main", "(other)", "5", "5", "320", "0", "-", "-", "10", "0"],
        ], "\(second)")
        #expect(second.contains { $0.hasPrefix("~ estimated") }, "a legend for ~: \(second)")
        // Sorted by rate: its column's title carries the arrow.
        #expect(second.contains { $0.hasPrefix("PORT") && $0.contains("EV/S▼") }, "\(second)")
    }

    // MARK: - On a terminal

    /// What `script` recorded of a full-screen run, read as a terminal
    /// would show it.
    struct Screen {
        let output: String

        /// The screens drawn between entering and leaving the alternate
        /// screen, each as its lines without escape sequences. A drawn line
        /// starts with "erase the line" (ESC[2K) and ends at the line's
        /// end; what else reached the terminal (the program's own output)
        /// is not part of a screen.
        var frames: [[String]] {
            guard let enter = output.range(of: SnifferTopTests.enterScreen) else { return [] }
            let end = output.range(of: SnifferTopTests.leaveScreen, options: .backwards, range: enter.upperBound..<output.endIndex)?.lowerBound
                ?? output.endIndex
            return output[enter.upperBound..<end].components(separatedBy: SnifferTopTests.home).dropFirst().compactMap { frame in
                let lines = frame.components(separatedBy: "\u{1B}[2K").dropFirst().map { piece in
                    Screen.visible(String(piece.prefix { $0 != "\r" && $0 != "\n" && $0 != "\r\n" }))
                }
                return lines.isEmpty ? nil : lines
            }
        }

        /// Text without its escape sequences (CSI: ESC [ parameters final).
        static func visible(_ text: String) -> String {
            text.replacing(/\x1B\[[0-9;?]*[A-Za-z]/, with: "")
        }

        /// Whether the alternate screen was left (the cursor shown again) after the last draw.
        var restoredAfterLastDraw: Bool {
            guard let lastDraw = output.range(of: SnifferTopTests.home, options: .backwards),
                  let leave = output.range(of: SnifferTopTests.leaveScreen, options: .backwards),
                  let cursor = output.range(of: "\u{1B}[?25h", options: .backwards) else { return false }
            return leave.lowerBound > lastDraw.lowerBound && cursor.lowerBound > lastDraw.lowerBound
        }
    }

    /// Runs `command` (a shell command line) in a pseudo-terminal `columns`
    /// by `rows`, its input read from `input` if given. Niced: a debug
    /// portsniff taking pingpong's traffic keeps a processor busy, and
    /// tests beside it that measure rates need theirs.
    static func inTerminal(_ command: String, columns: Int = 80, rows: Int = 24, input: String? = nil,
                           environment: [String: String], in directory: String) throws -> SpawnedProgram {
        let script = "/usr/bin/nice -n 10 /usr/bin/script -q -e -c 'stty cols \(columns) rows \(rows); \(command)' /dev/null"
        return try SpawnedProgram(path: "/bin/sh", ["-c", "exec " + script + (input.map { " < \($0)" } ?? "")],
                                  environment: environment, in: directory)
    }

    /// Waits until `condition` holds (polling the programs' output files),
    /// `timeout` seconds at most: a safety net, not a delay.
    static func waitUntil(timeout: Double = 60, _ condition: () -> Bool) -> Bool {
        let deadline = DispatchTime.now() + timeout
        while DispatchTime.now() < deadline {
            if condition() { return true }
            usleep(20_000)
        }
        return condition()
    }

    @Test("portsniff --top -- pingpong on an 80x24 terminal: the alternate screen, a header, pingpong's ports in the table, no line wider than 80 columns nor screen taller than 24 rows, and the terminal restored when pingpong exits",
          .enabled(if: ready, "needs portsniff and pingpong built, util-linux's script and nice"))
    func fullScreenUntilTheProgramExits() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let products = SpawnedProgram.productsDirectory
        // Long enough for a few screens however fast the machine: pingpong
        // makes tens of thousands of round trips a second.
        let command = "\(products)/portsniff --top -- \(products)/pingpong --count 100000; status=$?; stty -a; exit $status"
        let terminal = try Self.inTerminal(command, environment: ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"], in: directory)
        #expect(terminal.waitForExit(timeout: 240) == 0, "\(terminal.output.suffix(2_000))")
        let screen = Screen(output: terminal.output)
        #expect(screen.output.contains(Self.enterScreen) && screen.output.contains(Self.leaveScreen))
        #expect(screen.restoredAfterLastDraw, "the last draw came after the screen was left")
        let frames = screen.frames
        try #require(frames.count >= 2, "\(screen.output.suffix(2_000))")
        for frame in frames {
            #expect(frame.count <= 24, "\(frame.count) rows: \(frame)")
            for line in frame { #expect(line.count <= 80, "\(line.count) columns: \(line)") }
        }
        #expect(frames.allSatisfy { $0.first?.hasPrefix("portsniff --top - ") == true }, "\(frames)")
        let pid = try #require(screen.output.firstMatch(of: /pid (\d+) \(pingpong, exited\)/).map { String($0.1) }, "\(screen.output.suffix(2_000))")
        #expect(frames.contains { frame in
            frame.contains { $0.hasPrefix("PORT ") && $0.contains("EV/S") && $0.contains("P99") }
                && frame.contains { $0.hasPrefix("\(pid)/1 ") } && frame.contains { $0.hasPrefix("\(pid)/2 ") }
        }, "no screen with pingpong's two ports: \(frames.last ?? [])")
        // Keys were read one at a time, unechoed: the modes are the shell's again.
        let modes = Screen.visible(String(screen.output[(screen.output.range(of: Self.leaveScreen, options: .backwards)?.upperBound ?? screen.output.startIndex)...]))
        #expect(modes.contains(" icanon") && modes.contains(" echo ") && !modes.contains("-icanon") && !modes.contains("-echo "), "\(modes)")
    }

    @Test("portsniff --top on a terminal reads keys: t shows the threads, n sorts them by name and i reverses it, q quits with status 0 and gives the terminal back",
          .enabled(if: ready, "needs portsniff and pingpong built, util-linux's script and nice"))
    func keysChangeTheView() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        // The keys go through a FIFO that `script` reads as its input and
        // passes to the terminal: each is written once the screen shows
        // what the previous one did.
        let keys = directory + "/keys"
        try #require(mkfifo(keys, 0o600) == 0)
        let keyboard = open(keys, O_RDWR)  // read-write: opening does not wait for the reader
        try #require(keyboard >= 0)
        defer { close(keyboard) }
        func press(_ key: String) { _ = key.withCString { write(keyboard, $0, strlen($0)) } }

        let terminal = try Self.inTerminal("exec \(SpawnedProgram.productsDirectory)/portsniff --top", input: keys,
                                           environment: runtime.merging(["NO_COLOR": "1"]) { $1 }, in: directory)
        defer { terminal.killAndReap() }
        // The keys are read raw from the moment the screen is entered.
        try #require(Self.waitUntil { terminal.output.contains(Self.enterScreen) }, "\(terminal.output)\(terminal.errorOutput)")
        // Traffic until the test ends; any rate shows rows, so niced, not to
        // take the processors from tests running beside it.
        let pingpong = try SpawnedProgram(path: "/usr/bin/nice", ["-n", "19", SpawnedProgram.productsDirectory + "/pingpong", "--count", "100000000"],
                                          environment: runtime.merging(["RUNLOOPKIT_TAP": "1"]) { $1 }, in: directory)
        defer { pingpong.killAndReap() }
        func screens() -> [[String]] { Screen(output: terminal.output).frames }
        func shown(_ condition: ([String]) -> Bool) -> Bool { Self.waitUntil { screens().contains(where: condition) } }
        /// Whether a screen's table is titled with `title` and its first row holds `name`.
        func first(_ name: String, under title: String) -> ([String]) -> Bool {
            { frame in
                guard let index = frame.firstIndex(where: { $0.contains(title) }), index + 1 < frame.count else { return false }
                return frame[index + 1].contains(" \(name)")
            }
        }

        // The ports first.
        #expect(shown { $0.contains { $0.hasPrefix("\(pingpong.pid)/1 ") } }, "\(screens().last ?? [])")
        press("t")
        let threadTitle = /^\s*TID THREAD/
        #expect(shown { frame in
            frame.contains { $0.contains(threadTitle) }
                && frame.contains { $0.contains(/\sping(\s|$)/) } && frame.contains { $0.contains(/\spong(\s|$)/) }
        }, "t did not show the threads: \(screens().last ?? [])")
        // By name: A to Z (▲), then reversed (▼).
        press("n")
        #expect(shown(first("ping", under: "THREAD▲")), "n did not sort by name: \(screens().last ?? [])")
        press("i")
        #expect(shown(first("pong", under: "THREAD▼")), "i did not reverse the order: \(screens().last ?? [])")
        press("q")
        #expect(terminal.waitForExit(timeout: 60) == 0, "\(terminal.output.suffix(2_000))")
        #expect(Screen(output: terminal.output).restoredAfterLastDraw)
        #expect(terminal.output.contains("portsniff: "), "the summary after the screen: \(terminal.output.suffix(500))")
    }
}
