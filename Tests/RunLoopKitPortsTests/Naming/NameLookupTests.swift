// S-PORT-9: a name lookup is atomic. Holders are registered, released,
// taken over and SIGKILLed while RunLoopKit and a reader in Python that
// follows docs/wire-format.md ("Looking a name up") look the name up as fast
// as they can; every answer is checked against what the holders did.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Name lookups are atomic (S-PORT-9)", .blocksThreads)
struct NameLookupTests {
    /// A holder process: `ipc-demo server NAME`, which registers the name
    /// and serves until killed.
    struct Holder {
        let startTime: UInt64
        /// CLOCK_MONOTONIC when it was reaped: dead from then on, surely.
        var reapedAt: UInt64?
    }

    /// One answer of a lookup, and when the lookup began.
    struct Answer {
        enum Kind: Equatable { case held(pid: Int32, startTime: UInt64, portID: UInt64), free, died(Int32), other(String) }
        let startedAt: UInt64
        let kind: Kind
    }

    /// Why an answer is wrong, or nil: a send right must name a holder that
    /// was not yet reaped when the lookup began (a previous holder's entry
    /// is exactly that), with its own start time (not a reused pid's), or
    /// this process's registered port; errors must be the two documented.
    static func problem(
        _ answer: Answer, holders: [Int32: Holder], ownPortID: UInt64
    ) -> String? {
        switch answer.kind {
        case let .held(pid, startTime, portID):
            if pid == getpid() {
                return portID == ownPortID ? nil : "this process's port \(portID), which it never registered"
            }
            guard let holder = holders[pid] else { return "pid \(pid), which never held the name" }
            if holder.startTime != startTime { return "pid \(pid) with start time \(startTime), not the holder's \(holder.startTime)" }
            if let reaped = holder.reapedAt, reaped < answer.startedAt {
                return "holder \(pid), reaped \(Double(answer.startedAt - reaped) / 1e6) ms before the lookup began"
            }
            return nil
        case .free, .died:
            return nil
        case let .other(text):
            return "an error a lookup must not throw: \(text)"
        }
    }

    /// A program of Tests/ForeignPeers, which speak to RunLoopKit from
    /// its documents alone.
    static func foreignPeer(_ file: String) -> String {
        let testFile = #filePath
        let testsDirectory = testFile.split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
        return testsDirectory + "/ForeignPeers/" + file
    }

    /// What one reader has seen so far, kind by kind: the run goes on
    /// until each reader has exercised what the test asserts of it, however
    /// slowly holders start (a loaded machine, a sanitizer).
    struct Coverage {
        var lookups = 0
        var held = 0
        var childHolders = 0
        var died = 0

        /// What each reader must have seen: the assertions below read these.
        static let wanted = Coverage(lookups: 100_000, held: 1_000, childHolders: 10, died: 100)

        func covers(_ wanted: Coverage) -> Bool {
            lookups >= wanted.lookups && held >= wanted.held && childHolders >= wanted.childHolders && died >= wanted.died
        }

        /// The python reader's progress file: `<lookups> <held> <holders> <died>`.
        init(progressLine: String) {
            let fields = progressLine.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Int($0) }
            self.init()
            if fields.count == 4 { (lookups, held, childHolders, died) = (fields[0], fields[1], fields[2], fields[3]) }
        }

        init(lookups: Int = 0, held: Int = 0, childHolders: Int = 0, died: Int = 0) {
            (self.lookups, self.held, self.childHolders, self.died) = (lookups, held, childHolders, died)
        }
    }

    @Test("S-PORT-9: while holders are registered, released, taken over and SIGKILLed (at least 25 kill-and-restart cycles), 100,000 lookups by RunLoopKit and 100,000 by a reader following docs/wire-format.md give 0 bad answers: each names the live holder, or says not found or holder died")
    func lookupsStayAtomicUnderKills() async throws {
        try #require(SpawnedProgram.isBuilt("ipc-demo"), "needs the examples built (swift build)")
        let name = PortProcess.uniqueName("atomic")
        let directory = try PortProcess.runtimeDirectory()
        let scratch = makeTemporaryDirectory()
        defer {
            PortProcess.removeNameFiles(name)
            PortProcess.removeTree(scratch)
        }
        let holders = Locked<[Int32: Holder]>([:])
        let stop = Locked(false)
        let cycles = Locked(0)
        let ownPort = try Port(transport: .ipc)
        defer { ownPort.invalidate() }
        let ownPortID = ownPort.address.portID

        // The python reader runs from the start to its count, alongside.
        // It looks at least 100,000 times, and on until the stop file says
        // the holders' cycles are done (it must see them, however slow
        // their start under a sanitizer).
        let stopFile = scratch + "/stop"
        let progressFile = scratch + "/progress"
        let python = try SpawnedProgram(
            path: "/usr/bin/env",
            ["python3", Self.foreignPeer("lookup_name.py"), directory, name, "\(Coverage.wanted.lookups)", stopFile,
             progressFile, "\(getpid())"],
            in: scratch)

        // Kill and restart: one or two holders at once (two race for the
        // name: one takes it, the other is refused), killed before, during
        // or after their registration. "During" is aimed at from how long
        // the last registration took, which a sanitizer stretches to
        // hundreds of milliseconds; "after" waits for the registration, so
        // that every run has live holders to find and dead ones to report.
        let killer = SpawnedThread(named: "rlkt-killer") {
            var generator = SystemRandomNumberGenerator()
            var registrationTime = 50_000  // microseconds, until one is measured
            while !stop.withLock({ $0 }) {
                let count = Int.random(in: 1...2, using: &generator)
                let spawnedAt = MonotonicClock.now()
                let spawned = try (0..<count).map { _ in
                    try SpawnedProgram("ipc-demo", ["server", name], in: scratch)
                }
                for program in spawned {
                    let startTime = ProcessIdentity.startTime(of: program.pid) ?? 0
                    holders.withLock { $0[program.pid] = Holder(startTime: startTime) }
                }
                switch Int.random(in: 0..<10, using: &generator) {
                case 0..<3:  // before (or, when starts are quick, during)
                    PortProcess.pause(microseconds: Int.random(in: 0..<20_000, using: &generator))
                case 3..<5:  // about when the registration happens
                    PortProcess.pause(microseconds: Int.random(in: registrationTime / 2...registrationTime * 11 / 10, using: &generator))
                default:  // after: one holds the name (or every one gave up, refused)
                    let limit = MonotonicClock.instant(secondsFromNow: 30)
                    while MonotonicClock.now() < limit {
                        if let pid = try? PortNameServer.lookup(name).address.pid, spawned.contains(where: { $0.pid == pid }) {
                            registrationTime = max(1_000, Int((MonotonicClock.now() - spawnedAt) / 1_000))
                            break
                        }
                        if spawned.allSatisfy({ PortProcess.isDead($0.pid) }) { break }
                        PortProcess.pause(microseconds: 1_000)
                    }
                    PortProcess.pause(microseconds: Int.random(in: 5_000..<60_000, using: &generator))
                }
                for program in spawned {
                    program.killAndReap()
                    let reaped = MonotonicClock.now()
                    holders.withLock { $0[program.pid]?.reapedAt = reaped }
                }
                cycles.withLock { $0 += 1 }
            }
        }
        // This process takes the name when it is free and releases it
        // (unregister) after a while: takeovers and releases by a live process.
        let contender = SpawnedThread(named: "rlkt-contender") {
            while !stop.withLock({ $0 }) {
                if (try? PortNameServer.register(ownPort, name: name)) != nil {
                    PortProcess.pause(microseconds: Int.random(in: 2_000..<20_000))
                    PortNameServer.unregister(name)
                }
                PortProcess.pause(microseconds: Int.random(in: 5_000..<40_000))
            }
        }
        // The RunLoopKit lookers' coverage, one reader for the assertions.
        let coverage = Locked(Coverage())
        let childHoldersSeen = Locked<Set<Int32>>([])
        let lookers = (0..<2).map { index in
            SpawnedThread(named: "rlkt-looker-\(index)") { () -> [Answer] in
                var answers: [Answer] = []
                while !stop.withLock({ $0 }) {
                    let startedAt = MonotonicClock.now()
                    do throws(PortError) {
                        let port = try PortNameServer.lookup(name)
                        let pid = port.address.pid
                        let newHolder = pid != getpid() && childHoldersSeen.withLock { $0.insert(pid).inserted }
                        coverage.withLock {
                            $0.held += 1
                            if newHolder { $0.childHolders += 1 }
                        }
                        answers.append(Answer(startedAt: startedAt, kind: .held(
                            pid: pid, startTime: port.address.startTime, portID: port.address.portID)))
                    } catch .nameNotFound {
                        answers.append(Answer(startedAt: startedAt, kind: .free))
                    } catch let .nameHolderDied(_, pid) {
                        coverage.withLock { $0.died += 1 }
                        answers.append(Answer(startedAt: startedAt, kind: .died(pid)))
                    } catch {
                        answers.append(Answer(startedAt: startedAt, kind: .other("\(error)")))
                    }
                    coverage.withLock { $0.lookups += 1 }
                }
                return answers
            }
        }

        // Everything runs until 25 cycles are done and each reader (the
        // RunLoopKit lookers together, and the python reader by its
        // progress file) has seen every kind of answer as often as the
        // assertions below ask; then the python reader is told to stop, and
        // then everything else. A thread of its own decides and waits: this
        // test must neither hold one of the few threads that run the other
        // tests' tasks for minutes, nor keep killing holders until one is
        // free to resume it.
        let pythonCoverage: @Sendable () -> Coverage = { Coverage(progressLine: SpawnedProgram.read(progressFile)) }
        let conductor = SpawnedThread(named: "rlkt-conductor") { () -> (enough: Bool, pythonStatus: Int32?) in
            let enough = waitUntil(timeout: 900) {
                cycles.withLock { $0 } >= 25 && coverage.withLock { $0 }.covers(.wanted)
                    && pythonCoverage().covers(.wanted)
            }
            close(open(stopFile, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600))
            let pythonStatus = python.waitForExit(timeout: 600)
            stop.withLock { $0 = true }
            return (enough, pythonStatus)
        }
        let (enough, pythonStatus, answers) = try await PortProcess.onThread("rlkt-joins") {
            let (enough, pythonStatus) = try conductor.join(timeout: 1_600)
            let answers = try lookers.flatMap { try $0.join(timeout: 120) }
            try killer.join(timeout: 120)
            try contender.join(timeout: 120)
            return (enough, pythonStatus, answers)
        }
        #expect(enough, "in 900 s: \(cycles.withLock { $0 }) cycles (25 wanted); RunLoopKit saw \(coverage.withLock { $0 }), python \(pythonCoverage()), each reader wanted \(Coverage.wanted)")
        #expect(pythonStatus == 0, "the python reader failed: \(python.errorOutput)")

        let known = holders.withLock { $0 }
        let pythonAnswers = python.output.split(separator: "\n").map { line -> Answer in
            let fields = line.split(separator: " ")
            let startedAt = UInt64(fields.first ?? "") ?? 0
            switch fields.count > 1 ? fields[1] : "" {
            case "held" where fields.count >= 5:
                return Answer(startedAt: startedAt, kind: .held(
                    pid: Int32(fields[2]) ?? 0, startTime: UInt64(fields[3]) ?? 0, portID: UInt64(fields[4]) ?? 0))
            case "free": return Answer(startedAt: startedAt, kind: .free)
            case "died" where fields.count >= 3: return Answer(startedAt: startedAt, kind: .died(Int32(fields[2]) ?? 0))
            default: return Answer(startedAt: startedAt, kind: .other(String(line)))
            }
        }
        for (reader, list) in [("RunLoopKit", answers), ("python", pythonAnswers)] {
            let problems = list.compactMap { Self.problem($0, holders: known, ownPortID: ownPortID) }
            let held = list.filter { if case .held = $0.kind { true } else { false } }
            let heldByChildren = Set(held.compactMap { answer -> Int32? in
                if case let .held(pid, _, _) = answer.kind, pid != getpid() { pid } else { nil }
            })
            let died = list.filter { if case .died = $0.kind { true } else { false } }.count
            let wanted = Coverage.wanted
            #expect(list.count >= wanted.lookups, "\(reader): \(list.count) lookups")
            #expect(problems.isEmpty, "\(reader): \(problems.count) bad answers, first: \(problems.prefix(5))")
            // The run exercised what it claims: live holders found, many of
            // them, and names of killed holders seen as such.
            #expect(held.count >= wanted.held, "\(reader): only \(held.count) lookups found a holder")
            #expect(heldByChildren.count >= wanted.childHolders, "\(reader): only \(heldByChildren.count) distinct holders found")
            #expect(died >= wanted.died, "\(reader): only \(died) lookups saw a holder that died")
            print("S-PORT-9 \(reader): \(list.count) lookups, \(held.count) found a holder (\(heldByChildren.count) holders), \(died) saw one that died, \(problems.count) bad; \(known.count) holders in \(cycles.withLock { $0 }) cycles")
        }
    }

    @Test("S-PORT-9: a name whose holder was SIGKILLed is answered with .nameHolderDied naming it (by a process that swept before the death), and is taken over by the next registration; a name released by a live holder is .nameNotFound")
    func deadHolderIsSaidSo() async throws {
        try #require(SpawnedProgram.isBuilt("ipc-demo"), "needs the examples built (swift build)")
        let directory = try PortProcess.makeTemporaryDirectory("died")
        defer { PortProcess.removeTree(directory) }
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [directory = directory as String] in
            await PortChild.run {
                PortChild.useRuntimeDirectory(directory)
                _ = try PortNameServer.directory()  // this process's sweep is done
                let holder = try SpawnedProgram(
                    "ipc-demo", ["server", "served"], environment: ["RUNLOOPKIT_RUNTIME_DIR": directory], in: directory)
                let found = try PortNameServer.lookup("served", timeout: .seconds(30))
                PortChild.check(found.address.pid == holder.pid, "looked up \(found), not the holder \(holder.pid)")
                holder.killAndReap()
                let error = PortProcess.error { _ = try PortNameServer.lookup("served") } as? PortError
                PortChild.check(error == .nameHolderDied("served", pid: holder.pid), "after the kill: \(String(describing: error))")
                PortChild.check(error?.description.contains("process \(holder.pid)") == true, "the message names the dead holder")
                let taker = try Port(transport: .ipc)
                try PortNameServer.register(taker, name: "served")
                PortChild.check((try? PortNameServer.lookup("served")) === taker, "the dead holder's name was not taken over")
                PortNameServer.unregister("served")
                let released = PortProcess.error { _ = try PortNameServer.lookup("served") } as? PortError
                PortChild.check(released == .nameNotFound("served"), "after unregister: \(String(describing: released))")
                withExtendedLifetime(taker) {}
            }
        }
        ChildOutput(result).expectSuccess()
    }

    @Test("S-PORT-9: a sweep of the runtime directory running again and again beside registrations never undoes one: at least 2,000 register-lookup-unregister rounds (on until 100 sweeps ran beside them) all succeed, a name held throughout keeps its files, and unheld names' files go while other files stay")
    func sweepBesideRegistrations() async throws {
        let directory = try PortProcess.makeTemporaryDirectory("sweep-race")
        defer { PortProcess.removeTree(directory) }
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [directory = directory as String] in
            await PortChild.run {
                PortChild.useRuntimeDirectory(directory)
                let held = try Port(transport: .ipc)
                try PortNameServer.register(held, name: "kept")
                // A name nobody holds (a released one's files), and a file
                // that is not the name server's.
                for file in ["stale.lock", "stale.port", "tap-1234.state"] {
                    close(open(directory + "/" + file, O_CREAT | O_WRONLY, 0o600))
                }
                let stop = Locked(false)
                let sweepCount = Locked(0)
                let sweeper = SpawnedThread(named: "rlkt-sweeper") { () -> Int in
                    while !stop.withLock({ $0 }) {
                        RuntimeDirectory.sweep(directory)
                        sweepCount.withLock { $0 += 1 }
                    }
                    return sweepCount.withLock { $0 }
                }
                let port = try Port(transport: .ipc)
                var failures: [String] = []
                // 2,000 rounds at least, and on until 100 sweeps ran beside
                // them (a loaded machine may hold the sweeper back), 10 minutes at most.
                let limit = MonotonicClock.instant(secondsFromNow: 600)
                var round = 0
                while round < 2_000 || (sweepCount.withLock({ $0 }) < 100 && MonotonicClock.now() < limit) {
                    defer { round += 1 }
                    do {
                        try PortNameServer.register(port, name: "churn")
                        let found = try PortNameServer.lookup("churn")
                        if found !== port { failures.append("round \(round): lookup gave \(found)") }
                        PortNameServer.unregister("churn")
                    } catch {
                        failures.append("round \(round): \(error)")
                    }
                }
                stop.withLock { $0 = true }
                let sweeps = try sweeper.join()
                PortChild.check(failures.isEmpty, "\(failures.count) failed rounds: \(failures.prefix(3))")
                PortChild.check(sweeps >= 100, "only \(sweeps) sweeps ran beside the rounds")
                PortChild.check((try? PortNameServer.lookup("kept")) === held, "the held name no longer resolves")
                PortChild.check(PortProcess.exists(directory + "/kept.lock") && PortProcess.exists(directory + "/kept.port"),
                                "the held name's files were swept")
                RuntimeDirectory.sweep(directory)
                let left = PortProcess.directoryEntries(directory)
                PortChild.check(!left.contains("stale.lock") && !left.contains("stale.port"), "an unheld name's files stayed: \(left)")
                PortChild.check(!left.contains("churn.lock"), "the released name's lock file stayed: \(left)")
                PortChild.check(left.contains("tap-1234.state") && left.contains("host-id"), "a file not the name server's was swept: \(left)")
                withExtendedLifetime((held, port)) {}
            }
        }
        ChildOutput(result).expectSuccess()
    }

    @Test("S-PORT-9: a waiter kept off the CPU past the 100 ms settle still looks again: a name settling is given up on only after 100 ms and 50 looks, and a name seen free starts the count again")
    func settleWaitCountsLooks() {
        let start = MonotonicClock.now()
        let later = MonotonicClock.instant(seconds: NameLock.settleSeconds * 3, after: start)
        var wait = NameLock.SettleWait()
        let firstLook = wait.mayLookAgain(now: start)
        #expect(firstLook)
        // The waiter slept 300 ms between its first look and the rest (the
        // failure a loaded CI machine showed: one look after a long
        // preemption, then "already registered").
        var looksAfterThePause = 0
        while wait.mayLookAgain(now: later) { looksAfterThePause += 1 }
        #expect(looksAfterThePause == NameLock.SettleWait.minimumLooks - 2)
        // Looks alone do not end the wait while the 100 ms last.
        var quick = NameLock.SettleWait()
        var looksWithinTheSettle = 0
        for _ in 0..<(NameLock.SettleWait.minimumLooks * 4) where quick.mayLookAgain(now: start) {
            looksWithinTheSettle += 1
        }
        #expect(looksWithinTheSettle == NameLock.SettleWait.minimumLooks * 4)
        let pastBoth = quick.mayLookAgain(now: later)
        #expect(!pastBoth)
        quick.reset()
        let afterReset = quick.mayLookAgain(now: later)
        #expect(afterReset, "a new settling starts its own count")
    }

    @Test("S-PORT-9: a registrant SIGKILLed mid-registration (holding the lock, nothing written) leaves a name that is not found and is taken over at once; one SIGSTOPped there makes lookups answer not found after the 100 ms settle and registrations .nameInUse naming it, until it dies")
    func registrantKilledOrStoppedMidRegistration() async throws {
        let directory = try PortProcess.makeTemporaryDirectory("midreg")
        defer { PortProcess.removeTree(directory) }
        // Killed between its lock and its write.
        let killed = try await #require(processExitsWith: .signal(SIGKILL), observing: [\.standardErrorContent]) {
            [directory = directory as String] in
            PortChild.useRuntimeDirectory(directory)
            _ = try? NameLock.acquire(directory + "/half.lock")
            kill(getpid(), SIGKILL)
        }
        _ = killed
        // A registrant stopped between its lock and its write (python: the
        // lock's holder is then the pid spawned; env execs python in place).
        let script = "import fcntl, os, signal, sys; f = open(sys.argv[1], 'a'); fcntl.flock(f, fcntl.LOCK_EX); os.kill(os.getpid(), signal.SIGSTOP)"
        let stopped = try SpawnedProgram(path: "/usr/bin/env", ["python3", "-c", script, directory + "/stuck.lock"], in: directory)
        defer { stopped.killAndReap() }
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [directory = directory as String, stuck = stopped.pid as Int32] in
            await PortChild.run {
                PortChild.useRuntimeDirectory(directory)
                _ = try PortNameServer.directory()
                // The killed one: its lock went with it; the name is free.
                let lookedUp = PortProcess.error { _ = try PortNameServer.lookup("half") } as? PortError
                PortChild.check(lookedUp == .nameNotFound("half"), "after a kill mid-registration: \(String(describing: lookedUp))")
                let port = try Port(transport: .ipc)
                try PortNameServer.register(port, name: "half")
                PortChild.check((try? PortNameServer.lookup("half")) === port, "not taken over")
                // The stopped one holds the lock with nothing written.
                PortChild.check(PortProcess.waitUntilLocked(directory + "/stuck.lock"), "the stopped registrant never locked")
                let started = MonotonicClock.now()
                let stuckLookup = PortProcess.error { _ = try PortNameServer.lookup("stuck") } as? PortError
                let waited = Double(MonotonicClock.now() - started) / 1e9
                PortChild.check(stuckLookup == .nameNotFound("stuck"), "a stuck registration: \(String(describing: stuckLookup))")
                PortChild.check(waited >= NameLock.settleSeconds && waited < 5, "the lookup waited \(waited) s")
                let refused = PortProcess.error { try PortNameServer.register(try Port(transport: .ipc), name: "stuck") } as? PortError
                PortChild.check(refused == .nameInUse("stuck", pid: stuck), "registering a stuck name: \(String(describing: refused))")
                withExtendedLifetime(port) {}
            }
        }
        ChildOutput(result).expectSuccess()
    }
}
