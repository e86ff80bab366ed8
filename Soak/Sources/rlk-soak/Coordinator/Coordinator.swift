import Glibc
import RunLoopKit
import Synchronization

/// The parent process: spawns the children, kills and replaces them at
/// random, brings everyone to the checkpoints (after warm-up, at the end),
/// drains, and hands what it gathered to the verdict.
final class Coordinator: @unchecked Sendable {
    // @unchecked Sendable: the mutable state is the main thread's; the
    // control thread touches only `inbox`, `directory` and `table`.
    private let options: SoakOptions
    private let name = "rlk-soak-\(getpid())"
    private let control = LoopThread(name: "soak-coord")
    /// Kept for the whole run: a port nobody holds is gone, and its name with it.
    private var controlPort: Port?
    private let inbox = ControlInbox()
    private let directory = DirectoryKeeper()
    private let table = Mutex([UInt32: ChildRecord]())
    private var slots: [ChildRecord] = []
    private var nextIncarnation: UInt32 = 1
    private var generator: SeededGenerator
    private var gathered = Gathered()
    private var checkpoints = 0

    private static let answerLimit = 120.0
    private static let broadcastInterval = 0.25

    init(options: SoakOptions) {
        self.options = options
        generator = SeededGenerator(seed: options.seed, stream: 0xC0)
    }

    /// The whole run; returns the process's exit status.
    func run() -> Int32 {
        let started = MonotonicTime.now()
        Console.say("rlk-soak: \(options.seconds) s, \(options.children) children x \(options.threads) threads x \(options.portsPerWorker) ports, seed \(options.seed), warm-up \(options.warmUp) s")
        do {
            try startControl()
            for slot in 0..<options.children { spawn(slot: slot) }
            for record in slots { try awaitHello(record) }
            try load(from: MonotonicTime.now())
            try finish()
        } catch {
            gathered.failures.append("the run could not complete: \(error)")
            for record in slots { record.give(.kill) }
        }
        gathered.elapsed = MonotonicTime.seconds(MonotonicTime.now() - started)
        let verdict = Verdict(options: options, gathered: gathered)
        verdict.printSummary()
        return verdict.passed ? 0 : 1
    }

    // MARK: - Control

    private func startControl() throws {
        try control.start()
        try control.performAndWait(timeout: .seconds(30)) { [self] in
            let port = try Port(transport: .ipc)
            try PortNameServer.register(port, name: name)
            port.setMessageHandler { [self] message in
                do {
                    try handle(ControlMessage(message), replyPort: message.replyPort)
                } catch {
                    inbox.post(.failure(incarnation: 0, "coordinator: \(error)"))
                }
            }
            try port.schedule(in: RunLoop.current, forMode: .default)
            controlPort = port
            let broadcast = try Timer(timeInterval: Self.broadcastInterval, repeats: true) { [self] _ in broadcastDirectory() }
            RunLoop.current.add(broadcast, forMode: .default)
        }
    }

    /// On the control thread.
    private func handle(_ message: ControlMessage, replyPort: Port?) throws {
        switch message {
        case let .hello(incarnation, _):
            guard let record = table.withLock({ $0[incarnation] }), let replyPort else {
                throw ControlError.malformed("hello from unknown incarnation \(incarnation)")
            }
            record.helloReceived(control: replyPort)
        case let .endpointsChanged(_, added, removed):
            directory.change(added: added, removed: removed)
        case .descriptorBallast:
            // Its reply port is all it brings (see RegistryBallast).
            break
        default:
            inbox.post(message)
        }
    }

    /// On the control thread: every child learns the named ports and the dead.
    private func broadcastDirectory() {
        let message = ControlMessage.directory(directory.snapshot)
        for record in table.withLock({ Array($0.values) }) {
            guard let port = record.control, port.isValid else { continue }
            try? message.send(to: port, timeout: 0.5)
        }
    }

    // MARK: - Children

    private func spawn(slot: Int) {
        let record = ChildRecord(slot: slot, incarnation: nextIncarnation)
        nextIncarnation += 1
        table.withLock { $0[record.incarnation] = record }
        if slot < slots.count { slots[slot] = record } else { slots.append(record) }
        let childOptions = ChildOptions(
            incarnation: record.incarnation, coordinatorPID: getpid(), coordinatorName: name,
            threads: options.threads, portsPerWorker: options.portsPerWorker, streamsPerWorker: options.streamsPerWorker,
            maxBurst: options.maxBurst, seed: options.seed, lifetimeLimit: options.seconds * 3 + 600)
        ChildLauncher.launch(record, options: childOptions)
    }

    private func awaitHello(_ record: ChildRecord) throws {
        guard record.waitForHello(seconds: Self.answerLimit) else {
            throw ControlError.timedOut("child \(record.incarnation) never said hello (\(record.termination ?? "still running"))")
        }
    }

    private var liveChildren: [ChildRecord] { slots }

    // MARK: - The load

    /// Until the end: the warm-up checkpoint, then kills at random intervals.
    private func load(from start: UInt64) throws {
        let end = start + MonotonicTime.nanoseconds(options.seconds)
        let warmUpEnd = start + MonotonicTime.nanoseconds(options.warmUp)
        // No kill in the last seconds: the replacement must be up and
        // sending before the end.
        let lastKill = end - MonotonicTime.nanoseconds(min(5, options.seconds / 5))
        var warmedUp = false
        var nextKill = start + MonotonicTime.nanoseconds(drawKillInterval())
        while true {
            let now = MonotonicTime.now()
            if now >= end { break }
            if !warmedUp && now >= warmUpEnd {
                gathered.baselines = try checkpoint(resuming: true)
                warmedUp = true
                Console.say("rlk-soak: warm-up over at \(seconds(since: start)) s; levels taken")
                continue
            }
            if now >= nextKill {
                if now < lastKill { try killAndReplace(since: start) }
                nextKill = MonotonicTime.now() + MonotonicTime.nanoseconds(drawKillInterval())
                continue
            }
            let wake = min(end, nextKill, warmedUp ? UInt64.max : warmUpEnd)
            if let message = inbox.next(before: wake) { unexpected(message) }
        }
    }

    private func drawKillInterval() -> Double {
        let range = options.killInterval
        return range.lowerBound + Double(generator.next() % 1000) / 1000 * (range.upperBound - range.lowerBound)
    }

    private func seconds(since start: UInt64) -> String {
        String(Int(MonotonicTime.seconds(MonotonicTime.now() - start)))
    }

    /// SIGKILLs a child other than the first slot's and starts a new
    /// incarnation in its place.
    private func killAndReplace(since start: UInt64) throws {
        let candidates = slots.filter { $0.slot != 0 }
        let victim = candidates[Int(generator.next() % UInt64(candidates.count))]
        victim.give(.kill)
        guard victim.waitForExit(seconds: 30) else { throw ControlError.timedOut("child \(victim.incarnation) did not die of SIGKILL") }
        guard victim.killedBySignal9, let killInstant = victim.killInstant, let pid = victim.pid else {
            throw ControlError.malformed("child \(victim.incarnation) ended \(victim.termination ?? "?") instead of by SIGKILL")
        }
        directory.markDead(victim.incarnation)
        gathered.kills.append(Gathered.Kill(incarnation: victim.incarnation, pid: pid, instant: killInstant, coordinatorRecord: victim))
        Console.say("rlk-soak: \(seconds(since: start)) s: killed child \(victim.incarnation) (pid \(pid)); starting child \(nextIncarnation)")
        spawn(slot: victim.slot)
        try awaitHello(slots[victim.slot])
    }

    // MARK: - Checkpoints and the end

    /// Brings every process to the quiet state and samples it.
    private func checkpoint(resuming: Bool) throws -> [UInt32: ResourceSample] {
        checkpoints += 1
        let ownBallast = try RegistryBallast(tag: "\(name)-b0-\(checkpoints)")
        defer { ownBallast.invalidate() }
        let anchor = slots[0].incarnation
        for record in liveChildren {
            let others = liveChildren.filter { $0 !== record }.map { ChildOptions.controlName(coordinatorPID: getpid(), incarnation: $0.incarnation) }
            send(.pause(lookUp: others + ownBallast.names, host: record.incarnation == anchor, tag: "\(name)-b\(anchor)-\(checkpoints)"), to: record)
        }
        let paused = try collect("paused") { if case let .paused(incarnation, ballast) = $0 { (incarnation, ballast) } else { nil } }
        try RegistryBallast.lookUp(paused[anchor] ?? [])
        broadcast(.measure)
        let own = ProcessProbe.settledSample()
        var samples = try collect("sample") { if case let .sample(incarnation, sample) = $0 { (incarnation, sample) } else { nil } }
        samples[0] = own
        if resuming { broadcast(.resume) }
        return samples
    }

    private func finish() throws {
        broadcast(.stopSending)
        let stops = try collect("stop report") { if case let .stopReport(report) = $0 { (report.incarnation, report) } else { nil } }
        gathered.stopReports = Array(stops.values)
        // The streams that lived to the end, grouped by their receiver's process.
        let liveEndpoints = Dictionary(stops.values.flatMap { report in report.liveEndpoints.map { ($0, report.incarnation) } },
                                       uniquingKeysWith: { first, _ in first })
        var expectations: [UInt32: [Expectation]] = [:]
        for report in stops.values {
            for stream in report.streams {
                guard let receiver = liveEndpoints[stream.destination] else { continue }
                expectations[receiver, default: []].append(Expectation(destination: stream.destination, key: stream.key, sent: stream.sent))
            }
        }
        gathered.liveEndpoints = Set(liveEndpoints.keys)
        for record in liveChildren {
            send(.drain(expectations[record.incarnation] ?? []), to: record)
        }
        let drains = try collect("drain report") { if case let .drainReport(report) = $0 { (report.incarnation, report) } else { nil } }
        gathered.drainReports = Array(drains.values)
        gathered.finals = try checkpoint(resuming: false)
        broadcast(.exit)
        for record in liveChildren {
            if !record.waitForExit(seconds: 60) {
                gathered.failures.append("child \(record.incarnation) did not exit within 60 s of being told to")
                record.give(.kill)
            } else if !record.exitedCleanly {
                gathered.failures.append("child \(record.incarnation) ended \(record.termination ?? "?") instead of exiting with 0")
            }
        }
        gathered.children = liveChildren.map(\.incarnation)
    }

    private func broadcast(_ message: ControlMessage) {
        for record in liveChildren { send(message, to: record) }
    }

    private func send(_ message: ControlMessage, to record: ChildRecord) {
        guard let port = record.control else { return }
        do {
            try message.send(to: port)
        } catch {
            gathered.failures.append("cannot send to child \(record.incarnation): \(error)")
        }
    }

    /// One answer from every live child, keyed by incarnation.
    private func collect<T>(_ what: String, _ match: (ControlMessage) -> (UInt32, T)?) throws -> [UInt32: T] {
        let wanted = Set(liveChildren.map(\.incarnation))
        var answers: [UInt32: T] = [:]
        let deadline = MonotonicTime.now() + MonotonicTime.nanoseconds(Self.answerLimit)
        while Set(answers.keys) != wanted {
            guard let message = inbox.next(before: deadline) else {
                throw ControlError.timedOut("\(what) from children \(wanted.subtracting(answers.keys).sorted()) within \(Int(Self.answerLimit)) s")
            }
            if let (incarnation, answer) = match(message), wanted.contains(incarnation) {
                answers[incarnation] = answer
            } else {
                unexpected(message)
            }
        }
        return answers
    }

    private func unexpected(_ message: ControlMessage) {
        if case let .failure(incarnation, description) = message {
            gathered.failures.append("child \(incarnation): \(description)")
        } else {
            gathered.failures.append("unexpected control message \(message)")
        }
    }
}
