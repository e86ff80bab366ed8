// S-PORT-4's exit bound: a process waits at most the exit bound at exit for
// what it sent to other processes to be written, whatever its peers do
// (stopped, slow, dead, never connected), and logs what it then loses with
// its count. Each test runs the sender as a child process (an exit test)
// that says when it starts to exit (`ExitWatch`); a thread of the parent
// sees it end through a pidfd, not through the test runner, which may be
// busy with other exit tests. The bounds asserted are upper bounds with
// seconds of slack, not timings: before the bound existed such an exit
// took 12 s or never ended.
internal import CLinuxSupport
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("The exit bound (S-PORT-4)", .blocksThreads)
struct ExitBoundTests {
    /// Slack over the bound for process teardown and a loaded machine: 3 s,
    /// or 8 s under a sanitizer, whose slowness stretches the teardown (and
    /// under AddressSanitizer the child's LeakSanitizer scan at its exit
    /// falls within the time measured). Either way the default bound and
    /// its slack stay under the 12 s such an exit took before the bound.
    static let slackSeconds = ProcessProbe.sanitizerName == nil ? 3.0 : 8.0

    /// How the child sets its bound.
    enum Setting: String, Codable, Sendable, CaseIterable {
        case byDefault, api500ms, environment500ms, environmentZero

        var seconds: Double {
            switch self {
            case .byDefault: 2
            case .api500ms, .environment500ms: 0.5
            case .environmentZero: 0
            }
        }

        /// In the child, before it exits.
        func apply() {
            switch self {
            case .byDefault: unsetenv("RUNLOOPKIT_EXIT_BOUND")
            case .api500ms: Port.exitBound = .milliseconds(500)
            case .environment500ms: setenv("RUNLOOPKIT_EXIT_BOUND", "0.5", 1)
            case .environmentZero: setenv("RUNLOOPKIT_EXIT_BOUND", "0", 1)
            }
        }
    }

    /// A holder of `name` in another process: `ipc-demo server`.
    static func startServer(_ name: String, in directory: String) throws -> SpawnedProgram {
        try #require(SpawnedProgram.isBuilt("ipc-demo"), "needs the examples built (swift build)")
        let server = try SpawnedProgram("ipc-demo", ["server", name], in: directory)
        _ = try PortNameServer.lookup(name, timeout: .seconds(30))  // registered
        return server
    }

    /// In the child: looks `name` up, sends one message (so that the
    /// connection is made: a peer stopped before would be unreachable,
    /// S-PORT-8), then stops the peer (SIGSTOP): from then on it reads
    /// nothing.
    static func connectThenStop(_ name: String, pid: Int32) throws -> Port {
        let peer = try PortNameServer.lookup(name)
        try peer.send(msgid: 7, components: [.data(Data(count: 64))], before: Date() + 10)
        kill(pid, SIGSTOP)
        return peer
    }

    /// How long a child takes from saying it exits to being gone: the child
    /// writes its pid and the time into a FIFO (`announce`); a thread of the
    /// parent reads them, then waits on a pidfd for the child's end. What
    /// the child writes to standard error from then on (the exit's log,
    /// which the test runner no longer collects) goes to a file, `log`.
    final class ExitWatch: Sendable {
        let path: String
        private let watcher: SpawnedThread<Double?>

        init(in directory: String) throws {
            let fifo = directory + "/exiting"
            path = fifo
            guard mkfifo(fifo, 0o600) == 0 else { throw TestFailure("mkfifo(\(fifo)) failed: \(errno)") }
            watcher = SpawnedThread(named: "rlkt-exit-watch") { () -> Double? in
                // Read and write: opening never waits for the child, and
                // a read that times out is the child that never said.
                let fd = open(fifo, O_RDWR | O_CLOEXEC)
                defer { close(fd) }
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                guard poll(&ready, 1, 120_000) == 1 else { return nil }
                var bytes = [UInt8](repeating: 0, count: 64)
                let count = read(fd, &bytes, bytes.count)
                let fields = String(decoding: bytes[..<max(count, 0)], as: UTF8.self).split(separator: " ")
                guard fields.count == 2, let pid = Int32(fields[0]), let exiting = UInt64(fields[1].prefix { $0.isNumber }) else { return nil }
                let pidfd = rlk_pidfd_open(pid)
                guard pidfd >= 0 else { return Double(MonotonicClock.now() - exiting) / 1e9 }  // already gone
                defer { close(pidfd) }
                var end = pollfd(fd: pidfd, events: Int16(POLLIN), revents: 0)
                guard poll(&end, 1, 120_000) == 1 else { return nil }
                return Double(MonotonicClock.now() - exiting) / 1e9
            }
        }

        /// In the child, last: sends standard error to the log file, and
        /// says it exits now.
        static func announce(_ path: String) {
            let log = open(path + ".log", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            dup2(log, 2)
            close(log)
            let line = Array("\(getpid()) \(MonotonicClock.now())\n".utf8)
            let fd = open(path, O_WRONLY | O_CLOEXEC)
            _ = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            close(fd)
        }

        /// What the child wrote to standard error while it exited.
        var log: String { SpawnedProgram.read(path + ".log") }

        /// Seconds from the announcement to the child's end.
        func seconds() throws -> Double {
            try #require(try watcher.join(timeout: 150), "the child never said it was exiting, or did not end")
        }
    }

    /// The number of messages an exit log says were lost, if it logged a loss.
    static func lostMessages(_ log: String) -> Int? {
        guard let line = log.split(separator: "\n").first(where: { $0.contains("exit: stopped waiting") }) else { return nil }
        let marker = " message(s) accepted but not written are lost"
        guard let found = line.firstRange(of: marker) else { return 0 }
        let digits = line[..<found.lowerBound].reversed().prefix { $0.isNumber }
        return Int(String(digits.reversed()))
    }

    @Test("S-PORT-4: with a stopped peer (SIGSTOP) holding a full queue, the exit waits at most the bound (default 2 s, 0.5 s by Port.exitBound or RUNLOOPKIT_EXIT_BOUND, 0 for none), then logs the messages lost with their count", arguments: Setting.allCases)
    func stoppedPeer(setting: Setting) async throws {
        let name = PortProcess.uniqueName("exit-stopped")
        let scratch = makeTemporaryDirectory()
        defer {
            PortProcess.removeNameFiles(name)
            PortProcess.removeTree(scratch)
        }
        let server = try Self.startServer(name, in: scratch)
        defer { server.killAndReap() }
        let watch = try ExitWatch(in: scratch)
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String, setting = setting as Setting, watchPath = watch.path as String, pid = server.pid as Int32] in
            await PortChild.run {
                let peer = try Self.connectThenStop(name, pid: pid)
                var accepted = 1
                // Until the queue is full: the peer reads nothing.
                while (try? peer.send(msgid: 7, components: [.data(Data(count: 64))], before: Date() + 0.2)) != nil {
                    accepted += 1
                    PortChild.check(accepted < 1_000_000, "the stopped peer's queue never filled")
                    if accepted >= 1_000_000 { break }
                }
                PortChild.report("accepted", accepted)
                setting.apply()
            }
            ExitWatch.announce(watchPath)
        }
        let output = ChildOutput(result)
        output.expectSuccess()
        let seconds = try watch.seconds()
        #expect(seconds <= setting.seconds + Self.slackSeconds, "exit took \(seconds) s with a bound of \(setting.seconds) s")
        let lost = Self.lostMessages(watch.log)
        #expect((lost ?? 0) > 0, "no loss logged with its count. Exit log: \(watch.log)")
        #expect((lost ?? 0) <= output.integer("accepted") ?? 0)
        print("S-PORT-4 exit bound \(setting): \(output.integer("accepted") ?? 0) accepted, exit in \(Int(seconds * 1000)) ms, \(lost ?? -1) logged lost")
    }

    @Test("S-PORT-4: with a slow peer (2 ms a message, 3,000 queued), the exit waits at most the bound (0.5 s), then logs the loss; a peer that reads everything in time gets it all and nothing is logged")
    func slowPeer() async throws {
        let name = PortProcess.uniqueName("exit-slow")
        let scratch = makeTemporaryDirectory()
        defer {
            PortProcess.removeNameFiles(name)
            PortProcess.removeTree(scratch)
        }
        let slow = try IPCInbox("exit-slow", keepMessages: false) { _ in PortProcess.pause(milliseconds: 2) }
        defer { slow.close() }
        try PortNameServer.register(slow.port, name: name)
        let watch = try ExitWatch(in: scratch)
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String, watchPath = watch.path as String] in
            await PortChild.run {
                let peer = try PortNameServer.lookup(name)
                for index in 0..<3_000 {
                    do {
                        try peer.send(msgid: 7, components: [.data(Data(count: 64))], before: Date() + 30)
                    } catch {
                        PortChild.fail("send \(index): \(error)")
                        break
                    }
                }
                Port.exitBound = .milliseconds(500)
            }
            ExitWatch.announce(watchPath)
        }
        let output = ChildOutput(result)
        output.expectSuccess()
        let seconds = try watch.seconds()
        #expect(seconds <= 0.5 + Self.slackSeconds, "exit took \(seconds) s with a bound of 0.5 s")
        #expect(watch.log.contains("exit: stopped waiting"), "no loss logged. Exit log: \(watch.log)")

        // A peer that keeps up: everything arrives, nothing is logged.
        let fast = try IPCInbox("exit-fast", keepMessages: false)
        defer { fast.close() }
        let fastName = PortProcess.uniqueName("exit-fast")
        defer { PortProcess.removeNameFiles(fastName) }
        try PortNameServer.register(fast.port, name: fastName)
        let fastScratch = scratch + "/fast"
        #expect(mkdir(fastScratch, 0o700) == 0)
        let quietWatch = try ExitWatch(in: fastScratch)
        let delivered = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = fastName as String, watchPath = quietWatch.path as String] in
            await PortChild.run {
                let peer = try PortNameServer.lookup(name)
                for _ in 0..<3_000 { try peer.send(msgid: 7, components: [.data(Data(count: 64))], before: Date() + 30) }
            }
            ExitWatch.announce(watchPath)
        }
        ChildOutput(delivered).expectSuccess()
        let quietSeconds = try quietWatch.seconds()
        #expect(quietSeconds <= 2 + Self.slackSeconds, "exit took \(quietSeconds) s")
        #expect(!quietWatch.log.contains("exit: stopped waiting"), "a loss logged where everything was read: \(quietWatch.log)")
        #expect(await fast.arrival(ofCount: 3_000), "a reading peer got \(fast.count) of 3,000")
    }

    @Test("S-PORT-4: with a peer SIGKILLed while messages were queued to it, the exit does not wait for it: within the bound (2 s)")
    func deadPeer() async throws {
        let name = PortProcess.uniqueName("exit-dead")
        let scratch = makeTemporaryDirectory()
        defer {
            PortProcess.removeNameFiles(name)
            PortProcess.removeTree(scratch)
        }
        let server = try Self.startServer(name, in: scratch)
        defer { server.killAndReap() }
        // The child says when the queue is full, the parent kills the peer
        // (and reaps it: see `killAndReap`) and says so: two FIFOs.
        let filled = scratch + "/filled", killed = scratch + "/killed"
        #expect(mkfifo(filled, 0o600) == 0 && mkfifo(killed, 0o600) == 0)
        let killer = SpawnedThread(named: "rlkt-exit-killer") {
            let signal = open(filled, O_RDONLY | O_CLOEXEC)
            var byte: UInt8 = 0
            _ = read(signal, &byte, 1)
            close(signal)
            server.killAndReap()
            let answer = open(killed, O_WRONLY | O_CLOEXEC)
            _ = write(answer, &byte, 1)
            close(answer)
        }
        let watch = try ExitWatch(in: scratch)
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String, filled = filled as String, killed = killed as String, watchPath = watch.path as String,
             pid = server.pid as Int32] in
            await PortChild.run {
                let peer = try Self.connectThenStop(name, pid: pid)
                while (try? peer.send(msgid: 7, components: [.data(Data(count: 64))], before: Date() + 0.2)) != nil {}
                var byte: UInt8 = 1
                let signal = open(filled, O_WRONLY | O_CLOEXEC)
                _ = write(signal, &byte, 1)
                close(signal)
                let answer = open(killed, O_RDONLY | O_CLOEXEC)
                _ = read(answer, &byte, 1)
                close(answer)
            }
            ExitWatch.announce(watchPath)
        }
        try killer.join()
        let output = ChildOutput(result)
        output.expectSuccess()
        let seconds = try watch.seconds()
        #expect(seconds <= 2 + Self.slackSeconds, "exit took \(seconds) s")
    }

    @Test("S-PORT-4, S-PORT-8: with a peer that never completes a connection (a listener that never speaks), nothing was accepted and the exit is within the bound (2 s)")
    func neverConnectedPeer() async throws {
        let path = try PortProcess.runtimeDirectory() + "/exit-silent-\(getpid()).sock"
        let fd = try UnreachablePortTests.unixSocket(boundTo: path, listening: true)
        defer { close(fd); unlink(path) }
        let descriptor = UnreachablePortTests.descriptor(UnreachablePortTests.otherProcess, ipcPath: path)
        let scratch = makeTemporaryDirectory()
        defer { PortProcess.removeTree(scratch) }
        let watch = try ExitWatch(in: scratch)
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [descriptor = descriptor as [UInt8], watchPath = watch.path as String] in
            await PortChild.run {
                let address = try descriptor.withUnsafeBytes { try WireFormat.decodeDescriptor($0) }
                let peer = Port.resolve(address)
                let error = PortProcess.error { try peer.send(msgid: 7, before: Date() + 10) }
                PortChild.check(PortProcess.caseName(error) == "unreachable", "send: \(String(describing: error))")
            }
            ExitWatch.announce(watchPath)
        }
        let output = ChildOutput(result)
        output.expectSuccess()
        let seconds = try watch.seconds()
        #expect(seconds <= 2 + Self.slackSeconds, "exit took \(seconds) s")
        #expect(!watch.log.contains("exit: stopped waiting"), "a loss logged where nothing was accepted: \(watch.log)")
    }

    @Test("S-PORT-4: an invalid RUNLOOPKIT_EXIT_BOUND is refused with a warning and the default (2 s) stays; Port.exitBound wins over the variable")
    func settingTheBound() async throws {
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            await PortChild.run {
                setenv("RUNLOOPKIT_EXIT_BOUND", "soon", 1)
                PortChild.check(Port.exitBound == .seconds(2), "an invalid value: \(Port.exitBound)")
                setenv("RUNLOOPKIT_EXIT_BOUND", "0.25", 1)
                PortChild.check(Port.exitBound == .milliseconds(250), "0.25: \(Port.exitBound)")
                Port.exitBound = .seconds(1)
                PortChild.check(Port.exitBound == .seconds(1), "the API's value: \(Port.exitBound)")
                Port.exitBound = .zero
                PortChild.check(Port.exitBound == .zero, "zero: \(Port.exitBound)")
            }
        }
        let output = ChildOutput(result)
        output.expectSuccess()
        #expect(output.standardError.contains("RUNLOOPKIT_EXIT_BOUND=soon is not a number of seconds"), output.comment)
    }
}
