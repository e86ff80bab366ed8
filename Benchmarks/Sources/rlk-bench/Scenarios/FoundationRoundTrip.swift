/// docs/performance.md ("Targets"): against Foundation on Linux; ≥ 3 × faster than SocketPort's round trip.
struct FoundationRoundTrip: Scenario {
    let name = "foundation-roundtrip"
    let summary = "PortMessage round trip between two LoopThreads vs Foundation SocketPort between two RunLoop threads"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (iterations, placement) = (config.socketPortIterations, config.placement)
        let ours = PortPingPong(
            label: "RunLoopKit Port (two LoopThreads, inproc)", transport: .inproc,
            iterations: iterations, warmup: config.roundTripWarmup, timeout: config.timeoutSeconds, placement: placement,
            makeEcho: { try PortPingPong.threadEcho(name: "bench-pong", transport: .inproc, cpu: placement.second) })
        // SocketPort gets a short timeout: if it hangs here, the row says
        // "unavailable" rather than holding up the run.
        let socketPort = SocketPortPingPong(iterations: iterations, warmup: config.roundTripWarmup, timeout: 20,
                                            placement: placement)
        let measured = interleave([ours, socketPort], repetitions: config.roundTripRepetitions, better: .lower)
        return [
            ScenarioResult(
                name: "foundation-roundtrip", title: "round trip between two threads vs Foundation SocketPort",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: .fasterBy(3).standing(.guarded),
                notes: ["\(config.roundTripRepetitions) × \(iterations) round trips per side; SocketPort runs over TCP loopback (its only transport on Linux)"],
                chartGroup: "vs Foundation SocketPort"),
        ]
    }
}
