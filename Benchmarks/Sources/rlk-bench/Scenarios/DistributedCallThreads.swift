/// docs/performance.md ("Distributed calls"): a distributed actor's call
/// with a small argument between two threads of one process, through
/// RunLoopKit's PortActorSystem (two systems, inproc ports: the call and
/// its reply are typed messages) against Swift's
/// LocalTestingDistributedActorSystem (no transport: an actor hop). No
/// target: reported, as the typed request's coder is.
struct DistributedCallThreads: Scenario {
    let name = "distributed-call-threads"
    let summary = "a distributed actor's echo(Int) from another thread: PortActorSystem (inproc) vs Swift's LocalTestingDistributedActorSystem"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (iterations, placement) = (config.distributedCallIterations, config.placement)
        let ours = DistributedCallRoundTrip(.otherThread, iterations: iterations, warmup: config.distributedCallWarmup,
                                            timeout: config.timeoutSeconds, placement: placement)
        let local = LocalTestingCallRoundTrip(iterations: iterations, warmup: config.distributedCallWarmup,
                                              timeout: config.timeoutSeconds, placement: placement)
        let measured = interleave([ours, local], repetitions: config.distributedCallRepetitions, better: .lower)
        return [
            ScenarioResult(
                name: "distributed-call-threads", title: "distributed call, echo(Int), a task on one LoopThread → an actor pinned to another",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: nil,
                notes: ["\(config.distributedCallRepetitions) × \(iterations) calls per side, interleaved, after a warm-up repetition",
                        "reported, no target: ours encodes the call and its reply as typed port messages between two systems; LocalTestingDistributedActorSystem resolves to the actor itself, so its call is an actor hop and back"],
                chartGroup: "distributed call"),
        ]
    }
}
