// Foundation's Timer on Foundation's RunLoop. Imports Foundation and not
// RunLoopKit; see FoundationThread.swift.
import Foundation
import Glibc

/// The same field of timers as RLKTimerLateness, on Foundation: `count`
/// repeating Foundation timers on a Foundation thread's RunLoop, first fire
/// dates spread over one interval. Foundation timers are scheduled by Date,
/// so lateness is measured on the wall clock (Date), in microseconds.
final class FoundationTimerLateness: Contender {
    let label = "Foundation Timer (Foundation RunLoop thread)"
    var optional: Bool { true }
    private let count: Int
    private let interval: Double
    private let seconds: Double
    /// The CPU its thread runs on (-1: any): RLKTimerLateness's.
    private let cpu: Int32

    init(count: Int, interval: Double, seconds: Double, cpu: Int32) {
        self.count = count
        self.interval = interval
        self.seconds = seconds
        self.cpu = cpu
    }

    func measure() throws -> [Double] {
        let log = LatenessLog(capacity: count * (Int(seconds / interval) + 3))
        let lead = 0.2
        let (count, interval) = (self.count, self.interval)
        let timers = TimerList()
        let baseDate = Date()
        let thread = try FoundationLoopThread(name: "bench-ftimers", slice: 0.2, cpu: cpu) { loop in
            for index in 0..<count {
                let first = baseDate + lead + interval * Double(index) / Double(count)
                let schedule = FireSchedule(first: first.timeIntervalSinceReferenceDate * 1e6, interval: interval * 1e6)
                let timer = Foundation::Timer(fire: first, interval: interval, repeats: true) { _ in
                    log.append(schedule.fired(at: Date().timeIntervalSinceReferenceDate * 1e6))
                }
                timers.items.append(timer)
                loop.add(timer, forMode: .default)
            }
        } onExit: {
            for timer in timers.items { timer.invalidate() }
        }
        usleep(UInt32((lead + seconds) * 1e6))
        // Stopping waits for the thread to leave its loop: the log is complete after.
        guard thread.stop(within: 5) else { throw BenchError("the Foundation timer thread did not stop") }
        return log.samples
    }

    /// The timers, made and invalidated on the Foundation thread.
    final class TimerList: @unchecked Sendable {
        var items: [Foundation::Timer] = []
    }
}
