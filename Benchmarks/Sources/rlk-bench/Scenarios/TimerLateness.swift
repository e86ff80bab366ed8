/// DESIGN.md: timer lateness with 1,000 active timers on an idle machine:
/// p50 ≤ 100 µs, p99 ≤ 1 ms, and better than Foundation's Timer measured in
/// the same run.
struct TimerLateness: Scenario {
    let name = "timer-lateness"
    let summary = "lateness of 1,000 repeating timers on one loop vs Foundation Timer on a Foundation RunLoop"

    /// 1,000 timers, each repeating every second, first fires spread over
    /// that second: one timer due every millisecond.
    static let timerCount = 1_000
    static let interval = 1.0

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (count, interval, seconds) = (Self.timerCount, Self.interval, config.timerSeconds)
        let measured = interleave([
            RLKTimerLateness(count: count, interval: interval, seconds: seconds),
            FoundationTimerLateness(count: count, interval: interval, seconds: seconds),
        ], repetitions: config.timerRepetitions, warmups: 0, better: .lower)
        let target = Target(text: "p50 ≤ 100 µs, p99 ≤ 1,000 µs, ratio < 1 (better than Foundation)") { result in
            guard let ours = result.ours.summary else { return nil }
            let absolute = ours.median <= 100 && ours.p99 <= 1_000
            guard let ratio = result.ratio, let peer = result.peer?.summary else { return absolute ? nil : false }
            return absolute && ratio < 1 && ours.p99 <= peer.p99
        }
        return [
            ScenarioResult(
                name: "timer-lateness", title: "timer lateness, 1,000 active timers (fire time − fire date)",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: target,
                notes: ["\(count) timers repeating every \(format(interval)) s, staggered (one due per ms); \(config.timerRepetitions) × \(format(seconds)) s per side; \"better\" means both median and p99 lower",
                        "ours on CLOCK_MONOTONIC, Foundation's on the wall clock (its timers are scheduled by Date)"],
                chartGroup: "timer lateness"),
        ]
    }
}
