// portsniff as a reader of the tap (S-TAP-1): its socket, several
// sniffers at once, and the exact account of a sniffer stopped before or
// during the traffic (received + dropped = produced, from the program's
// count file).
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("portsniff: its socket and its account of the events (S-TAP-1)", .blocksThreads)
struct SnifferAccountTests {
    @Test("portsniff's socket file is 0600 while it listens, and removed when it stops (Ctrl-C)",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func snifferSocketFileIsPrivateAndRemoved() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = "\(directory)/tap.sock"
        let sniff = try SpawnedProgram("portsniff", ["--endpoint", "ipc://\(path)"], in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        var info = stat()
        #expect(stat(path, &info) == 0, "no socket file at \(path)")
        #expect(info.st_mode & 0o777 == 0o600, "mode \(String(info.st_mode & 0o777, radix: 8))")
        kill(sniff.pid, SIGINT)
        #expect(sniff.waitForExit(timeout: 30) != nil)
        #expect(access(path, F_OK) != 0, "the socket file was left behind")
    }

    @Test("S-TAP-1: two portsniffs at once, each on its own socket in the readers' directory, both get every event of pingpong under RUNLOOPKIT_TAP=1, numbered alike; their summaries say none was dropped",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func twoPortsniffsAtOnce() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let roundTrips = 200
        let sniffers = try (0..<2).map { _ in
            try SpawnedProgram("portsniff", ["--json", "--count", "\(4 * roundTrips)"], environment: runtime, in: directory)
        }
        for sniff in sniffers {
            #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        }
        // Two sockets of their own, in the readers' directory.
        #expect(Set(sniffers.map { $0.errorOutput }).count == 2)
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: runtime.merging(["RUNLOOPKIT_TAP": "1"]) { $1 }, in: directory)
        #expect(pingpong.waitForExit() == 0, "pingpong failed: \(pingpong.errorOutput)")
        var numbers: [[UInt64]] = []
        for sniff in sniffers {
            #expect(sniff.waitForExit(timeout: 30) == 0, "a portsniff did not see all \(4 * roundTrips) events: \(sniff.errorOutput)")
            numbers.append(decodeEvents(sniff.output).map(\.seq).sorted())
            #expect(sniff.errorOutput.contains("0 tap event(s) dropped"), "\(sniff.errorOutput)")
        }
        #expect(numbers[0] == Array(1...UInt64(4 * roundTrips)) && numbers[0] == numbers[1],
                "the two got \(numbers[0].count) and \(numbers[1].count) events")
    }

    @Test("S-TAP-1: a sniffer stopped (SIGSTOP) before the program starts and resumed after it exited accounts for every event exactly, from the program's count file: received + dropped = produced",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func stoppedSnifferAccountsExactly() throws {
        let (received, produced) = try Self.sniffStopped(roundTrips: 20_000, once: { _ in true })
        // Stopped, it could not even finish ZeroMQ's handshake: the tap could
        // pass nothing on, and says so.
        #expect(received < produced, "a stopped sniffer got all \(received) events")
    }

    @Test("S-TAP-1: a sniffer stopped (SIGSTOP) in the middle of the traffic and resumed after the program exited shows what waited for it and counts the rest as dropped: received + dropped = produced, exactly",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func snifferStoppedMidRunAccountsExactly() throws {
        // 60,000 events: more than the tap's ring (16,384) and socket hold
        // while the sniffer is stopped, and few enough for a loaded
        // ThreadSanitizer run (50,000 round trips took over a minute there).
        let (received, produced) = try Self.sniffStopped(roundTrips: 15_000, once: { $0.output.contains("\"kind\"") })
        #expect(received > 0 && received < produced, "\(received) of \(produced) received")
    }

    @Test("S-TAP-1: a sniffer whose connection cannot finish its handshake while the program runs (stopped, SIGSTOP, for longer than the 1 s connection bound) still gets every event once it runs: the tap holds them for it, neither sent nor dropped, and the program never waited for it",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func heldUpHandshakeLosesNothing() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let roundTrips = 30
        let sniff = try SpawnedProgram("portsniff", ["--json", "--count", "\(4 * roundTrips)"], environment: runtime, in: directory)
        defer { sniff.killAndReap() }
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        kill(sniff.pid, SIGSTOP)
        let stopped = ContinuousClock.now
        // The exit bound is how long pingpong's exit may wait for the
        // sniffer's handshake: long enough for the test to resume it.
        let tapped = runtime.merging(["RUNLOOPKIT_TAP": "1", "RUNLOOPKIT_EXIT_BOUND": "60"]) { $1 }
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: tapped, in: directory)
        // pingpong did all its work with the sniffer stopped; the tap holds
        // its events: none has left it, sent or dropped.
        let counts = Self.counts(of: pingpong.pid, in: directory + "/runtime", onceMade: 4 * roundTrips)
        #expect(counts?.produced == UInt64(4 * roundTrips) && counts?.settled == 0, "pingpong's events: \(String(describing: counts)); \(pingpong.errorOutput)")
        // Stopped for longer than the bound the tap once waited for a
        // handshake before dropping what it could not send.
        while ContinuousClock.now - stopped < Port.connectionBound * 2 { usleep(50_000) }
        kill(sniff.pid, SIGCONT)
        #expect(pingpong.waitForExit() == 0, "pingpong failed: \(pingpong.errorOutput)")
        #expect(sniff.waitForExit(timeout: 60) == 0, "portsniff did not get its \(4 * roundTrips) events: \(sniff.errorOutput)")
        #expect(decodeEvents(sniff.output).filter { $0.pid == pingpong.pid }.count == 4 * roundTrips)
    }

    @Test("S-TAP-1: a sniffer kept from reading (stopped, SIGSTOP) once connected, while more batches come than its queue takes but fewer events than the tap's ring holds, gets every event once it runs: the tap holds them for it instead of dropping them",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func stalledSnifferLosesNothing() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        // 15,000 events, fewer than the ring's 16,384; pingpong sends them
        // over hundreds of milliseconds, a batch a millisecond, where the
        // sniffer's queue takes 64 batches (and its socket's buffer a few
        // dozen more).
        let roundTrips = 3_750
        // --nice 0: its first line shows while the traffic still comes (at
        // the default 10, on a loaded machine, it can come after).
        let sniff = try SpawnedProgram("portsniff", ["--json", "--nice", "0", "--window", "0", "--count", "\(4 * roundTrips)"], environment: runtime, in: directory)
        defer { sniff.killAndReap() }
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        let tapped = runtime.merging(["RUNLOOPKIT_TAP": "1", "RUNLOOPKIT_EXIT_BOUND": "60"]) { $1 }
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: tapped, in: directory)
        // Stopped at its first event: its connection is made, and the rest
        // of the traffic meets its full queue, not its handshake.
        #expect(waitUntil(timeout: 60) { sniff.output.contains("\"kind\"") }, "portsniff got no event: \(sniff.errorOutput)")
        kill(sniff.pid, SIGSTOP)
        // All of pingpong's events made, and some still held for the
        // sniffer: not settled (a tap that dropped them would have settled
        // them all).
        let counts = Self.counts(of: pingpong.pid, in: directory + "/runtime", onceMade: 4 * roundTrips)
        #expect(counts.map { $0.produced == UInt64(4 * roundTrips) && $0.settled < $0.produced } == true, "pingpong's events: \(String(describing: counts))")
        kill(sniff.pid, SIGCONT)
        #expect(pingpong.waitForExit() == 0, "pingpong failed: \(pingpong.errorOutput)")
        #expect(sniff.waitForExit(timeout: 60) == 0, "portsniff did not get its \(4 * roundTrips) events: \(sniff.errorOutput)")
        #expect(decodeEvents(sniff.output).filter { $0.pid == pingpong.pid }.count == 4 * roundTrips)
    }

    @Test("S-TAP-1: a sniffer at an explicit endpoint (RUNLOOPKIT_TAP=<endpoint>) kept from reading (stopped, SIGSTOP) once connected, while more batches come than its queue takes, gets every event once it runs: while its connection stands the tap holds them for it, as for a reader in the readers' directory",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func stalledSnifferAtAnEndpointLosesNothing() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let endpoint = "ipc://\(directory)/tap.sock"
        // As above: more batches than the sniffer's queue takes, fewer
        // events than the ring holds.
        let roundTrips = 3_750
        let sniff = try SpawnedProgram("portsniff", ["--endpoint", endpoint, "--json", "--nice", "0", "--window", "0", "--count", "\(4 * roundTrips)"], in: directory)
        defer { sniff.killAndReap() }
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        let tapped = ["RUNLOOPKIT_TAP": endpoint, "RUNLOOPKIT_EXIT_BOUND": "60"]
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: tapped, in: directory)
        #expect(waitUntil(timeout: 60) { sniff.output.contains("\"kind\"") }, "portsniff got no event: \(sniff.errorOutput)")
        kill(sniff.pid, SIGSTOP)
        // pingpong's round trips are done (it says so before its exit,
        // which waits for what is held) while the sniffer, stopped, has
        // not had them all.
        #expect(waitUntil(timeout: 120) { pingpong.output.contains("mean round trip") }, "pingpong did not finish: \(pingpong.errorOutput)")
        let receivedWhileStopped = decodeEvents(sniff.output).count
        #expect(receivedWhileStopped < 4 * roundTrips, "the sniffer had every event before it was stopped")
        kill(sniff.pid, SIGCONT)
        #expect(pingpong.waitForExit() == 0, "pingpong failed: \(pingpong.errorOutput)")
        #expect(sniff.waitForExit(timeout: 60) == 0, "portsniff did not get its \(4 * roundTrips) events (\(receivedWhileStopped) while stopped): \(sniff.errorOutput)")
        #expect(decodeEvents(sniff.output).filter { $0.pid == pingpong.pid }.count == 4 * roundTrips)
        #expect(sniff.errorOutput.contains("\(4 * roundTrips) received + 0 dropped"), "\(sniff.errorOutput)")
    }

    /// Runs portsniff in the readers' directory of a private runtime
    /// directory, then pingpong with the tap on; stops portsniff (SIGSTOP)
    /// once `condition` holds of it, resumes it after pingpong exited and
    /// ends it (SIGINT). Checks pingpong's count file and that portsniff's
    /// summary adds up for it; returns the events received and produced.
    static func sniffStopped(roundTrips: Int, once condition: @escaping (SpawnedProgram) -> Bool) throws -> (received: Int, produced: Int) {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        // --nice 0: stopped at its first line, while the traffic still comes.
        let sniff = try SpawnedProgram("portsniff", ["--json", "--nice", "0"], environment: runtime, in: directory)
        defer { sniff.killAndReap() }
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        let tapped = runtime.merging(["RUNLOOPKIT_TAP": "1"]) { $1 }
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: tapped, in: directory)
        #expect(waitUntil(timeout: 30) { condition(sniff) }, "portsniff never got to the point of being stopped")
        kill(sniff.pid, SIGSTOP)
        #expect(pingpong.waitForExit() == 0, "pingpong failed: \(pingpong.errorOutput)")
        let produced = 4 * roundTrips
        // The program is gone; its count file stays, and says it all.
        let counts = try #require(countFiles(in: directory + "/runtime").first { $0.pid == pingpong.pid })
        #expect(counts.exited && counts.produced == UInt64(produced) && counts.settled == counts.produced && counts.name == "pingpong")
        // Resumed, then ended at once: what waits in its socket is shown
        // first, then the summary.
        kill(sniff.pid, SIGCONT)
        kill(sniff.pid, SIGINT)
        #expect(sniff.waitForExit(timeout: 60) == 0)
        let received = decodeEvents(sniff.output).filter { $0.pid == pingpong.pid }.count
        let line = sniff.errorOutput.split(separator: "\n").first { $0.contains("pid \(pingpong.pid) (pingpong, exited)") }.map(String.init)
        #expect(line == "  pid \(pingpong.pid) (pingpong, exited): events 1-\(produced) owed (\(produced)): \(received) received + \(produced - received) dropped",
                "\(sniff.errorOutput)")
        return (received, produced)
    }

    /// A tapped process's count file once it says `events` were made, or
    /// the last one read in 60 s. Read every 20 ms: each look reads and
    /// decodes the count files, which looked at every millisecond took a
    /// core from the rest of the suite.
    static func counts(of pid: pid_t, in runtime: String, onceMade events: Int) -> PortTapCounts? {
        var last: PortTapCounts?
        _ = waitUntil(timeout: 60, every: 0.02) {
            last = (try? countFiles(in: runtime))?.first { $0.pid == pid }
            return last.map { $0.produced == UInt64(events) } == true
        }
        return last
    }

    /// The count files of a runtime directory's tapped processes.
    static func countFiles(in runtime: String) throws -> [PortTapCounts] {
        let directory = runtime + "/tap/counts"
        return try PortProcess.directoryEntries(directory).filter { $0.hasSuffix(".json") }.map { name in
            try JSONDecoder().decode(PortTapCounts.self, from: Data(SpawnedProgram.read(directory + "/" + name).utf8))
        }
    }
}
