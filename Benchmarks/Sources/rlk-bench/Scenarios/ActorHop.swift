/// docs/performance.md ("Targets"): an actor method call hopping between two
/// actors pinned to two LoopThreads and back (S-EXEC-1), against the same
/// between two SwiftNIO event-loop executors (≤ 1.0 ×, guarded); Swift's
/// default executor beside it, whose pool is
/// pinned only with both sides on one CPU (`Placement.whilePoolPlaced`).
struct ActorHop: Scenario {
    let name = "actor-hop"
    let summary = "an actor call to an actor on another LoopThread and back vs the same on two SwiftNIO EventLoops and on Swift's default executor"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let iterations = config.roundTripIterations
        let (warmup, timeout, placement) = (config.roundTripWarmup, config.timeoutSeconds, config.placement)
        let measured = interleave([
            ActorHopRoundTrip(.loopThreads, iterations: iterations, warmup: warmup, timeout: timeout, placement: placement),
            ActorHopRoundTrip(.nioEventLoops, iterations: iterations, warmup: warmup, timeout: timeout, placement: placement),
            ActorHopRoundTrip(.swiftDefault, iterations: iterations, warmup: warmup, timeout: timeout, placement: placement),
        ], repetitions: config.roundTripRepetitions, better: .lower)
        let sizes = "\(config.roundTripRepetitions) × \(iterations) round trips per side, interleaved; a round trip is `await peer.pong()` from the other actor: two executor hops"
        return [
            ScenarioResult(
                name: "actor-hop", title: "actor call to another thread's actor and back",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: .ratioAtMost(1.0).standing(.guarded),
                notes: [sizes, "swift-nio \(nioVersionNote)"], chartGroup: "actor hop"),
            ScenarioResult(
                name: "actor-hop-default", title: "the same against Swift's default executor",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[2], target: nil,
                notes: ["informational; the default executor's threads are pinned with everything else when both sides share a CPU (--placement same), else they run free"], chartGroup: "actor hop"),
        ]
    }
}
