/// docs/performance.md ("Targets", "Distributed calls"): a distributed
/// actor's call with a small argument to another process, through
/// RunLoopKit's PortActorSystem over ipc, against the typed RPC a Swift user
/// would otherwise pick: a grpc-swift 2 unary call over HTTP/2 on a Unix
/// domain socket to a server in a child process. Target: a call's round
/// trip ≤ 0.5 × gRPC's (due in the typed-messages work). apple/swift-distributed-actors,
/// the other DistributedActorSystem with a transport, is not available
/// to this build (docs/performance.md says so).
struct DistributedCallProcesses: Scenario {
    let name = "distributed-call-processes"
    let summary = "a distributed actor's echo(Int) in a child process: PortActorSystem (ipc) vs a grpc-swift 2 unary call over a Unix socket"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (iterations, placement) = (config.distributedCallIterations, config.placement)
        let ours = DistributedCallRoundTrip(.childProcess, iterations: iterations, warmup: config.distributedCallWarmup,
                                            timeout: config.timeoutSeconds, placement: placement)
        #if RLK_BENCH_GRPC
        let grpc: any Contender = GRPCUnaryRoundTrip(iterations: iterations, warmup: config.distributedCallWarmup,
                                                     timeout: config.timeoutSeconds, placement: placement)
        #else
        let grpc: any Contender = NotBuiltPeer(
            label: "grpc-swift 2 unary, HTTP/2 over a Unix domain socket (a child process)",
            reason: "this rlk-bench was built with RLK_BENCH_GRPC=0, without its gRPC peer")
        #endif
        let measured = interleave([ours, grpc], repetitions: config.distributedCallRepetitions, better: .lower)
        return [
            ScenarioResult(
                name: "distributed-call-processes", title: "distributed call, echo(Int), to a child process, against a gRPC unary call",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: .ratioAtMost(0.5),
                notes: ["\(config.distributedCallRepetitions) × \(iterations) calls per side, interleaved, after a warm-up repetition; each side's callee is rlk-bench itself in a child process (the actor found by name; the gRPC server on a socket in the run directory)",
                        "both callers are a task preferring a LoopThread; the gRPC client's event loop and the caller's PortActorSystem thread sit beside it"],
                chartGroup: "distributed call"),
        ]
    }
}
