import Dispatch
import Glibc
import RunLoopKit

/// The far timers of a churn run, changed one by one by the churn timer's
/// block: the loop thread's alone. They are spread over three kinds of
/// mode, so that the loop keeps a heap per mode and a common-modes timer
/// sits in several heaps at once: the default mode (the one the loop
/// runs), another mode the loop never runs, and the common modes.
private final class FarTimers: @unchecked Sendable {
    // @unchecked Sendable: made, changed and invalidated on the loop thread only.
    var timers: [RunLoopKit.Timer] = []
    var changes = 0
    var generator = LoadRandom()
    static let otherMode = RunLoop.Mode("bench-other")

    /// A one-shot timer 10 to 20 s away that does nothing.
    func farTimer() throws -> RunLoopKit.Timer {
        try RunLoopKit.Timer(fire: farDate(), interval: 0, repeats: false) { _ in }
    }

    func farDate() -> Date { Date() + 10 + Double.random(in: 0..<10, using: &generator) }

    /// Where the timer at `index` goes: default, another mode, or the common modes.
    static func mode(for index: Int) -> RunLoop.Mode {
        switch index % 3 {
        case 0: .default
        case 1: otherMode
        default: .common
        }
    }

    /// Schedules every far timer in its mode.
    func schedule(on loop: RunLoop) {
        for (index, timer) in timers.enumerated() { loop.add(timer, forMode: Self.mode(for: index)) }
    }

    /// One change of the churn: a random far timer out (invalidated) and a
    /// new one in its place, in the same mode (two changes, as the C peer's
    /// remove and insert).
    @inline(never)  // a function of its own: callgrind counts a change from its entry (--toggle-collect)
    func replaceOne(on loop: RunLoop) throws {
        let index = Int.random(in: 0..<timers.count, using: &generator)
        timers[index].invalidate()
        let made = try farTimer()
        loop.add(made, forMode: Self.mode(for: index))
        timers[index] = made
        changes += 2
    }

    /// A random far timer's fire date moved (S-TMR-5): one change.
    @inline(never)  // as replaceOne
    func moveOne() {
        timers[Int.random(in: 0..<timers.count, using: &generator)].fireDate = farDate()
        changes += 1
    }
}

/// The load of a timer-churn round, the same for both sides.
struct TimerChurnLoad {
    /// One-shot timers 10 to 20 s away.
    let farCount: Int
    /// Seconds between two changes of the churn timer (one invalidate, one add).
    let churnInterval: Double
    /// One-shot timers whose lateness is measured, one at a random point of
    /// each `window / probes` seconds, on both sides: at fixed steps they
    /// would fall on the churn timer's grid, each waiting for a churn
    /// callout, and the median would measure how fast `add` returns rather
    /// than how late a timer fires under the load.
    let probes: Int
    let window: Double
}

/// RunLoopKit's timers at scale: `farCount` one-shot timers 10 to 20 s
/// away on one LoopThread, in three kinds of mode (`FarTimers`), a
/// repeating timer every `churnInterval` that invalidates one of them and
/// adds a new one in its mode (so 2 / churnInterval changes a second), and `probes` one-shot timers spread over `window` seconds,
/// each recording its lateness (fire time − its date, on CLOCK_MONOTONIC,
/// in µs). All through the public API.
final class RLKTimerChurn: Contender {
    let label = "RunLoopKit Timer (LoopThread)"
    private let load: TimerChurnLoad
    /// The CPU its loop runs on (-1: any), the C loop's too.
    private let cpu: Int32
    private var thread: LoopThread?
    /// Changes made in the last measurement, for the row's notes.
    private(set) var lastChanges = 0

    init(_ load: TimerChurnLoad, cpu: Int32) {
        self.load = load
        self.cpu = cpu
    }

    func setUp() throws {
        thread = try Placement.startedLoopThread("bench-churn", on: cpu)
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
            far.schedule(on: loop)
            let churn = try RunLoopKit.Timer(timeInterval: churnInterval, repeats: true) { _ in
                try? far.replaceOne(on: RunLoop.current)
            }
            loop.add(churn, forMode: .common)
            // Probe dates and their monotonic times read back to back (as timer-lateness).
            let baseDate = Date()
            let base = Double(monotonicNanoseconds()) / 1000
            var timers = [churn]
            for index in 0..<probes {
                // At a random point of its share of the window: probes at
                // fixed steps lay on the churn timer's own grid, each due
                // just after a churn fire (TimerChurnLoad.probes says why
                // that is not the load meant).
                let offset = lead + window * (Double(index) + Double.random(in: 0..<1, using: &far.generator)) / Double(probes)
                let due = base + offset * 1e6
                let probe = try RunLoopKit.Timer(fire: baseDate + offset, interval: 0, repeats: false) { _ in
                    log.append(Double(monotonicNanoseconds()) / 1000 - due)
                }
                // Half the probes in the common modes: fired from the
                // default mode's heap, which holds them beside its own.
                loop.add(probe, forMode: index % 2 == 0 ? .default : .common)
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
/// on the loop, spread over three kinds of mode as in the churn: on the
/// loop's thread, `invalidate()` of a random timer, `add` of a new one and
/// a moved `fireDate` (S-TMR-5), in turn; each sample is one batch's time
/// per change (ns).
final class RLKTimerChanges: Contender {
    let label = "RunLoopKit (invalidate + add)"
    private let count: Int
    private let changes: Int
    private let batches: Int
    /// The CPU its loop runs on (-1: any), the C heap's too.
    private let cpu: Int32
    private var thread: LoopThread?

    init(count: Int, changes: Int, batches: Int, cpu: Int32) {
        self.count = count
        self.changes = changes
        self.batches = batches
        self.cpu = cpu
    }

    func setUp() throws {
        thread = try Placement.startedLoopThread("bench-changes", on: cpu)
    }

    func measure() throws -> [Double] {
        guard let thread else { throw BenchError("not set up") }
        let (count, changes, batches) = (self.count, self.changes, self.batches)
        return try thread.performAndWait(timeout: .seconds(300)) { () throws -> [Double] in
            let loop = RunLoop.current
            let far = FarTimers()
            far.timers = try (0..<count).map { _ in try far.farTimer() }
            far.schedule(on: loop)
            var samples: [Double] = []
            for _ in 0..<batches {
                let before = monotonicNanoseconds()
                let changesBefore = far.changes
                // Two in three changes an invalidate or an add, one a move.
                while far.changes - changesBefore < changes / batches {
                    try far.replaceOne(on: loop)
                    far.moveOne()
                }
                samples.append(Double(monotonicNanoseconds() - before) / Double(far.changes - changesBefore))
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

/// The churn's loop without probes, its churn timer due every microsecond
/// (so due whenever the loop comes round), until it fired `fires` times:
/// what one pass with a churn callout costs, for callgrind
/// (`--workload timer-churn-passes`; CTimerChurnPasses is the C loop's).
/// The one sample is the time per fire (ns).
final class RLKTimerChurnPasses: Contender {
    let label = "RunLoopKit churn passes"
    private let farCount: Int
    private let fires: Int
    private var thread: LoopThread?

    init(farCount: Int, fires: Int) {
        self.farCount = farCount
        self.fires = fires
    }

    func setUp() throws {
        thread = try Placement.startedLoopThread("bench-churn-passes", on: -1)
    }

    func measure() throws -> [Double] {
        guard let thread else { throw BenchError("not set up") }
        let (farCount, fires) = (self.farCount, self.fires)
        let done = DispatchSemaphore(value: 0)
        let far = FarTimers()
        let start = monotonicNanoseconds()
        try thread.performAndWait(timeout: .seconds(120)) { () throws in
            let loop = RunLoop.current
            far.timers = try (0..<farCount).map { _ in try far.farTimer() }
            far.schedule(on: loop)
            let churn = try RunLoopKit.Timer(timeInterval: 0.000_001, repeats: true) { timer in
                try? far.replaceOne(on: RunLoop.current)
                if far.changes == 2 * fires {  // two a fire
                    timer.invalidate()
                    done.signal()
                }
            }
            loop.add(churn, forMode: .common)
        }
        guard done.wait(timeout: .now() + 600) == .success else { throw BenchError("the churn timer did not fire \(fires) times") }
        let elapsed = monotonicNanoseconds() - start
        try thread.performAndWait(timeout: .seconds(120)) {
            for timer in far.timers { timer.invalidate() }
        }
        return [Double(elapsed) / Double(fires)]
    }

    func tearDown() {
        thread?.stop()
        thread = nil
    }
}
