import Dispatch
import Glibc
import RunLoopKit

/// The far timers of a churn run, replaced one by one by the churn timer's
/// block: the loop thread's alone.
private final class FarTimers: @unchecked Sendable {
    // @unchecked Sendable: made, changed and invalidated on the loop thread only.
    var timers: [RunLoopKit.Timer] = []
    var changes = 0
    var generator = SystemRandomNumberGenerator()

    /// A one-shot timer 10 to 20 s away that does nothing.
    func farTimer() throws -> RunLoopKit.Timer {
        try RunLoopKit.Timer(fire: Date() + 10 + Double.random(in: 0..<10, using: &generator), interval: 0, repeats: false) { _ in }
    }

    /// One change of the load: a random far timer out (invalidated), a new one in.
    func replaceOne(on loop: RunLoop) throws {
        let index = Int.random(in: 0..<timers.count, using: &generator)
        timers[index].invalidate()
        let made = try farTimer()
        loop.add(made, forMode: .default)
        timers[index] = made
        changes += 2
    }
}

/// The load of a timer-churn round, the same for both sides.
struct TimerChurnLoad {
    /// One-shot timers 10 to 20 s away.
    let farCount: Int
    /// Seconds between two changes of the churn timer (one invalidate, one add).
    let churnInterval: Double
    /// One-shot timers whose lateness is measured, spread over `window` seconds.
    let probes: Int
    let window: Double
}

/// RunLoopKit's timers at scale: `farCount` one-shot timers 10 to 20 s
/// away on one LoopThread, a repeating timer every `churnInterval` that
/// invalidates one of them and adds a new one (so 2 / churnInterval changes
/// a second), and `probes` one-shot timers spread over `window` seconds,
/// each recording its lateness (fire time − its date, on CLOCK_MONOTONIC,
/// in µs). All through the public API.
final class RLKTimerChurn: Contender {
    let label = "RunLoopKit Timer (LoopThread)"
    private let load: TimerChurnLoad
    private var thread: LoopThread?
    /// Changes made in the last measurement, for the row's notes.
    private(set) var lastChanges = 0

    init(_ load: TimerChurnLoad) { self.load = load }

    func setUp() throws {
        let thread = LoopThread(name: "bench-churn")
        try thread.start()
        self.thread = thread
    }

    func measure() throws -> [Double] {
        guard let thread else { throw BenchError("not set up") }
        let (farCount, churnInterval, probes, window) = (load.farCount, load.churnInterval, load.probes, load.window)
        let log = LatenessLog(capacity: probes)
        let far = FarTimers()
        let lead = 0.2
        let made = try thread.performAndWait(timeout: .seconds(120)) { () throws -> [RunLoopKit.Timer] in
            let loop = RunLoop.current
            far.timers = try (0..<farCount).map { _ in try far.farTimer() }
            for timer in far.timers { loop.add(timer, forMode: .default) }
            let churn = try RunLoopKit.Timer(timeInterval: churnInterval, repeats: true) { _ in
                try? far.replaceOne(on: RunLoop.current)
            }
            loop.add(churn, forMode: .default)
            // Probe dates and their monotonic times read back to back (as timer-lateness).
            let baseDate = Date()
            let base = Double(monotonicNanoseconds()) / 1000
            var timers = [churn]
            for index in 0..<probes {
                let offset = lead + window * Double(index) / Double(probes)
                let due = base + offset * 1e6
                let probe = try RunLoopKit.Timer(fire: baseDate + offset, interval: 0, repeats: false) { _ in
                    log.append(Double(monotonicNanoseconds()) / 1000 - due)
                }
                loop.add(probe, forMode: .default)
                timers.append(probe)
            }
            return timers
        }
        usleep(UInt32((lead + window + 0.2) * 1e6))
        lastChanges = try thread.performAndWait(timeout: .seconds(120)) { () -> Int in
            for timer in made { timer.invalidate() }
            for timer in far.timers { timer.invalidate() }
            return far.changes
        }
        guard log.count == load.probes else { throw BenchError("\(log.count) of \(load.probes) probes fired") }
        return log.samples
    }

    func tearDown() {
        thread?.stop()
        thread = nil
    }
}

/// The cost of one timer change through the public API with `count` timers
/// on the loop: on the loop's thread, pairs of `invalidate()` on a random
/// timer and `add` of a new one; each sample is one batch's time per change
/// (ns).
final class RLKTimerChanges: Contender {
    let label = "RunLoopKit (invalidate + add)"
    private let count: Int
    private let changes: Int
    private let batches: Int
    private var thread: LoopThread?

    init(count: Int, changes: Int, batches: Int) {
        self.count = count
        self.changes = changes
        self.batches = batches
    }

    func setUp() throws {
        let thread = LoopThread(name: "bench-changes")
        try thread.start()
        self.thread = thread
    }

    func measure() throws -> [Double] {
        guard let thread else { throw BenchError("not set up") }
        let (count, changes, batches) = (self.count, self.changes, self.batches)
        return try thread.performAndWait(timeout: .seconds(300)) { () throws -> [Double] in
            let loop = RunLoop.current
            let far = FarTimers()
            far.timers = try (0..<count).map { _ in try far.farTimer() }
            for timer in far.timers { loop.add(timer, forMode: .default) }
            var samples: [Double] = []
            for _ in 0..<batches {
                let before = monotonicNanoseconds()
                for _ in 0..<(changes / batches / 2) { try far.replaceOne(on: loop) }
                samples.append(Double(monotonicNanoseconds() - before) / Double(changes / batches))
            }
            for timer in far.timers { timer.invalidate() }
            return samples
        }
    }

    func tearDown() {
        thread?.stop()
        thread = nil
    }
}
