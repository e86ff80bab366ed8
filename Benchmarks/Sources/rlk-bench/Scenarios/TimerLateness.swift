/// docs/performance.md ("Targets"): timer lateness with 1,000 active timers: better than
/// Foundation's Timer, measured in the same run, at p50 and at p99
/// (guarded). The row's notes also say whether p50 ≤ 100 µs and
/// p99 ≤ 1 ms hold (informational).
struct TimerLateness: Scenario {
    let name = "timer-lateness"
    let summary = "lateness of 1,000 repeating timers on one loop vs Foundation Timer on a Foundation RunLoop"

    /// 1,000 timers, each repeating every second, first fires spread over
    /// that second: one timer due every millisecond.
    static let timerCount = 1_000
    static let interval = 1.0

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (count, interval, seconds) = (Self.timerCount, Self.interval, config.timerSeconds)
        // Both loops on the same CPU (see TimerChurn).
        let cpu = config.placement.second
        let measured = interleave([
            RLKTimerLateness(count: count, interval: interval, seconds: seconds, cpu: cpu),
            FoundationTimerLateness(count: count, interval: interval, seconds: seconds, cpu: cpu),
        ], repetitions: config.timerRepetitions, warmups: 0, better: .lower)
        let target = Target(text: "better than Foundation at p50 and p99", standing: .guarded) { result in
            guard let ours = result.ours.summary, let peer = result.peer?.summary else { return nil }
            return ours.median < peer.median && ours.p99 < peer.p99
        }
        let absolute = measured[0].summary.map { ours in
            "absolute (informational, not a target): p50 \(format(ours.median)) µs \(ours.median <= 100 ? "≤" : ">") 100 µs, p99 \(format(ours.p99)) µs \(ours.p99 <= 1_000 ? "≤" : ">") 1,000 µs"
        }
        return [
            ScenarioResult(
                name: "timer-lateness", title: "timer lateness, 1,000 active timers (fire time − fire date)",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: target,
                notes: ["\(count) timers repeating every \(format(interval)) s, staggered (one due per ms); \(config.timerRepetitions) × \(format(seconds)) s per side; \"better\" means both median and p99 lower",
                        "ours on CLOCK_MONOTONIC, Foundation's on the wall clock (its timers are scheduled by Date)",
                        TimerChurn.pinning(cpu)]
                    + (absolute.map { [$0] } ?? []),
                chartGroup: "timer lateness"),
        ]
    }
}
