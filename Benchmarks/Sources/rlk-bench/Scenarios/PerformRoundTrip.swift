/// docs/performance.md ("Targets"): perform-on-thread round trip; ≤ 1.0 ×
/// SwiftNIO EventLoop.execute, guarded (no
/// regression against the commit before a change). Dispatch is shown beside it.
struct PerformRoundTrip: Scenario {
    let name = "perform-roundtrip"
    let summary = "RunLoop.perform ping-pong between two LoopThreads vs NIO EventLoop.execute and Dispatch async"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let iterations = config.roundTripIterations
        let (warmup, timeout, placement) = (config.roundTripWarmup, config.timeoutSeconds, config.placement)
        let measured = interleave([
            PerformPingPong(iterations: iterations, warmup: warmup, timeout: timeout, placement: placement),
            NIOExecutePingPong(iterations: iterations, warmup: warmup, timeout: timeout, placement: placement),
            DispatchPingPong(iterations: iterations, warmup: warmup, timeout: timeout, placement: placement),
        ], repetitions: config.roundTripRepetitions, better: .lower)
        let sizes = "\(config.roundTripRepetitions) × \(iterations) round trips per side, interleaved"
        return [
            ScenarioResult(
                name: "perform-roundtrip", title: "perform-on-thread round trip (A → B → A)",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: .ratioAtMost(1.0).standing(.guarded),
                notes: [sizes, "swift-nio \(nioVersionNote)",
                        "docs/performance.md, \"Targets\": ≤ 1.0×, guarded (a regression: the median ratio more than 10 % worse than at the commit before, over 3 --quick runs per placement)"], chartGroup: "perform round trip"),
            ScenarioResult(
                name: "perform-roundtrip-dispatch", title: "the same against Dispatch (two serial queues)",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[2], target: nil,
                notes: ["informational; Dispatch's pool threads are pinned with everything else when both sides share a CPU (--placement same), else they run wherever Dispatch puts them"],
                chartGroup: "perform round trip"),
        ]
    }
}

/// The swift-nio the benchmarks were resolved against (Package.swift asks for 2.101.2 or later).
let nioVersionNote = "2.101.x (from: 2.101.2 in Package.swift)"
