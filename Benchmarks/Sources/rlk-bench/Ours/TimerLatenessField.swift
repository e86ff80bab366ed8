import Glibc
import RunLoopKit

/// RunLoopKit's timers under load: `count` repeating timers with interval
/// `interval` on one LoopThread, their first fire dates spread evenly over
/// one interval (so a timer is due every interval / count seconds). Each
/// fire records its lateness: the fire time minus its scheduled date, both
/// on CLOCK_MONOTONIC, in microseconds.
final class RLKTimerLateness: Contender {
    let label = "RunLoopKit Timer (LoopThread)"
    private let count: Int
    private let interval: Double
    private let seconds: Double
    /// The CPU its loop runs on (-1: any), Foundation's too.
    private let cpu: Int32
    private var thread: LoopThread?

    init(count: Int, interval: Double, seconds: Double, cpu: Int32) {
        self.count = count
        self.interval = interval
        self.seconds = seconds
        self.cpu = cpu
    }

    func setUp() throws {
        thread = try Placement.startedLoopThread("bench-timers", on: cpu)
    }

    func measure() throws -> [Double] {
        guard let thread, let loop = thread.runLoop else { throw BenchError("not set up") }
        let log = LatenessLog(capacity: count * (Int(seconds / interval) + 3))
        let lead = 0.2
        // Date and monotonic base read back to back: RunLoopKit converts a
        // fire Date to CLOCK_MONOTONIC when the timer is made, so the
        // expected monotonic fire time is base + offset to within this gap.
        let baseDate = Date()
        let base = Double(monotonicNanoseconds()) / 1000
        var timers: [RunLoopKit.Timer] = []
        timers.reserveCapacity(count)
        for index in 0..<count {
            let offset = lead + interval * Double(index) / Double(count)
            let schedule = FireSchedule(first: base + offset * 1e6, interval: interval * 1e6)
            let timer = try RunLoopKit.Timer(fire: baseDate + offset, interval: interval, repeats: true) { _ in
                log.append(schedule.fired(at: Double(monotonicNanoseconds()) / 1000))
            }
            timers.append(timer)
            loop.add(timer, forMode: .default)
        }
        usleep(UInt32((lead + seconds) * 1e6))
        // Invalidated on the loop's thread, which also orders the log's writes before our read.
        let made = timers
        try thread.performAndWait(timeout: .seconds(10)) { for timer in made { timer.invalidate() } }
        return log.samples
    }

    func tearDown() {
        thread?.stop()
        thread = nil
    }
}
