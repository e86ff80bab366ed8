import Glibc

/// docs/performance.md ("Targets"): timers at scale. 100,000 active timers
/// on one loop with 10,000 adds and 10,000 removes a second: probe timers'
/// lateness at p99 within 5 µs of the same load on a bare timerfd + epoll
/// loop in C with a binary heap (guarded). And the cost of one change
/// through the public API at 1,000, 10,000 and 100,000 timers, whose growth
/// from the fewest to the most may be at most 1.1 × the growth of a C heap
/// of timer objects doing the same work, measured in the same run
/// (guarded); the C index heap's growth is shown beside it as a floor.
struct TimerChurn: Scenario {
    let name = "timer-churn"
    let summary = "100,000 timers with 20,000 changes a second: probe lateness vs a C timerfd + heap loop; the cost of one change at 1,000 to 100,000 timers"

    static let farCount = 100_000
    /// One invalidate and one add every 100 µs: 10,000 of each a second.
    static let churnInterval = 0.000_1
    /// Enough that p99 is the 20th latest of each round, not the 2nd, which
    /// one late wake-up would set.
    static let probes = 2_000
    static let changeCounts = [1_000, 10_000, 100_000]

    func visitsPerPass(_ config: RunConfig) -> Int { config.timerChurnVisitsPerPass }

    func run(_ config: RunConfig) -> [ScenarioResult] {
        var results: [ScenarioResult] = []
        let window = config.timerChurnWindow
        let load = TimerChurnLoad(farCount: Self.farCount, churnInterval: Self.churnInterval, probes: Self.probes, window: window)
        // Both loops on the same CPU: on this VM one vCPU can be slower than
        // the other for a while, and an unpinned side measures where it fell.
        let cpu = config.placement.second
        let ours = RLKTimerChurn(load, cpu: cpu)
        let floor = CTimerChurn(load, cpu: cpu)
        let measured = interleave([ours, floor], repetitions: config.timerRepetitions, warmups: 0, better: .lower)
        let withinFive = Target(text: "p99 ≤ the C loop's p99 + 5 µs", standing: .guarded) { result in
            guard let ours = result.ours.summary, let peer = result.peer?.summary else { return nil }
            return ours.p99 <= peer.p99 + 5
        }
        results.append(ScenarioResult(
            name: "timer-churn-\(Self.farCount)", title: "probe lateness, \(Self.farCount) timers, 10,000 adds and 10,000 removes a second",
            unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: withinFive,
            notes: ["\(Self.farCount) one-shot timers 10–20 s away; ours spread over the default mode, another mode and the common modes (the churn timer and half the probes in the common modes), the loop running the default mode; every \(Int(Self.churnInterval * 1e6)) µs a repeating timer invalidates one and adds one (ours: \(ours.lastChanges), C: \(floor.lastChanges) changes in the last round); \(Self.probes) probes over \(format(window)) s; \(config.timerRepetitions) round(s) per side",
                    "the C loop: one timerfd re-armed to the heap's earliest, epoll_wait, pop what is due",
                    Self.pinning(cpu)],
            chartGroup: "timer lateness"))

        let changes = config.timerChanges
        let place = config.placement.mode.rawValue
        for count in Self.changeCounts {
            // Each repetition in a fresh process (InFreshProcess.swift): in
            // one process this cost settles at a level of its own.
            let sizes = [String(count), String(changes), "5"]
            let measured = interleave(
                [InFreshProcess(["timer-changes-rlk", place] + sizes, timeout: config.timeoutSeconds * 5),
                 InFreshProcess(["timer-changes-c", place] + sizes, timeout: config.timeoutSeconds * 5)],
                repetitions: config.timerRepetitions, better: .lower)
            results.append(ScenarioResult(
                name: "timer-change-\(count)", title: "one timer change (invalidate, add or move) with \(count) timers on the loop",
                unit: "ns", better: .lower, ours: measured[0], peer: measured[1], target: nil,
                notes: ["\(changes) changes in 5 batches per round, each round in a fresh process after a warm-up round there, on the loop's thread, through the public API (a new Timer made for each add; invalidate, add and a moved fireDate in turn), the timers in three kinds of mode as in the churn; the C heap removes and inserts an index",
                        Self.pinning(cpu)]))
        }
        results += growth(config, changes: changes, cpu: cpu)
        return results
    }

    /// Rounds of register-only work a C heap of timer objects does before
    /// each removal, insertion and move (timer_object_heap.c): about as many
    /// instructions a change as RunLoopKit's, so that the two differ in how
    /// they keep their timers, not in how much else a change does.
    static let objectHeapWorkRounds = 750

    /// How the cost of one change grows from the fewest timers to the most,
    /// each side's growth measured within each fresh process
    /// (GrowthInOneDraw.swift says why not from the rows above): RunLoopKit
    /// judged against a C heap of timer objects doing the same work, the C
    /// index heap shown beside as a floor.
    private func growth(_ config: RunConfig, changes: Int, cpu: Int32) -> [ScenarioResult] {
        let (small, large) = (Self.changeCounts.first!, Self.changeCounts.last!)
        let arguments = [config.placement.mode.rawValue, String(small), String(large), String(changes), "5"]
        let measured = interleave(
            [InFreshProcess(["timer-growth-rlk"] + arguments, timeout: config.timeoutSeconds * 10),
             InFreshProcess(["timer-growth-c-objects"] + arguments + [String(Self.objectHeapWorkRounds)],
                            timeout: config.timeoutSeconds * 10),
             InFreshProcess(["timer-growth-c"] + arguments, timeout: config.timeoutSeconds * 10)],
            repetitions: config.timerRepetitions, better: .lower)
        let bound = 1.1
        let target = Target(text: "≤ \(format(bound))× the C heap of timer objects' growth", standing: .guarded) { result in
            result.ratio.map { $0 <= bound }
        }
        let perRound = "per round, in a fresh process after a warm-up round there: the median cost of a change with \(large) timers over the median with \(small), the two measured in turn twice (\(changes) changes in 5 batches each time) after a discarded time each"
        return [
            ScenarioResult(
                name: "timer-change-growth", title: "how the cost of one change grows from \(small) to \(large) timers",
                unit: "×", better: .lower, ours: measured[0], peer: measured[1], target: target,
                notes: [perRound,
                        "the peer: a C binary heap of 96-byte timer objects (timer_object_heap.c) under the same mix of changes, with \(Self.objectHeapWorkRounds) rounds of work on registers a removal, insertion and move (about RunLoopKit's instructions a change); ratio = our growth / its growth",
                        Self.pinning(cpu)]),
            ScenarioResult(
                name: "timer-change-growth-floor", title: "the same growth against the C index heap's",
                unit: "×", better: .lower, ours: measured[0], peer: measured[2], target: nil,
                notes: ["informational: the C heap of three index arrays (timer_heap.c, 1.6 MB at \(large) timers) grows least, having no timer objects to touch; log₂ ratio \(format(log2(Double(large)) / log2(Double(small))))×",
                        Self.pinning(cpu)]),
        ]
    }

    /// Where both sides ran, for the rows' notes.
    static func pinning(_ cpu: Int32) -> String {
        cpu >= 0 ? "both sides on CPU \(cpu)" : "neither side pinned (--placement free)"
    }
}
