/// docs/performance.md ("Targets"): round trip, ipc, two processes; ≤ 1.15 × raw libzmq ipc, guarded.
struct RoundTripIPC: Scenario {
    let name = "roundtrip-ipc"
    let summary = "PortMessage round trip to another process (ipc, named port) vs raw libzmq PAIR over ipc"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (iterations, placement) = (config.roundTripIterations, config.placement)
        var connection: RLKChildConnection?
        let ours = PortPingPong(
            label: "RunLoopKit Port (ipc, LoopThread ↔ child process)", transport: .ipc,
            iterations: iterations, warmup: config.roundTripWarmup, timeout: config.timeoutSeconds, placement: placement,
            makeEcho: {
                let made = try RLKChildConnection(tag: "echo", cpu: placement.second)
                connection = made
                return (made.port, { connection?.close() })
            })
        // The same, with the child holding on to the reply port between
        // messages: shows what the transport costs once a send right's
        // sending socket is reused (RunLoopKit keeps send rights to other
        // processes' ports only while something references them).
        var keptConnection: RLKChildConnection?
        let kept = PortPingPong(
            label: "RunLoopKit Port (ipc), child keeps the reply port", transport: .ipc,
            iterations: iterations, warmup: config.roundTripWarmup, timeout: config.timeoutSeconds, placement: placement,
            pingMsgid: ChildRoles.Msgid.pingKeepingReplyPort,
            makeEcho: {
                let made = try RLKChildConnection(tag: "echo-kept", cpu: placement.second)
                keptConnection = made
                return (made.port, { keptConnection?.close() })
            })
        let zmq = RawZMQProcessPeer(
            label: "raw libzmq PAIR ipc (C, child process)",
            mode: .roundTrip(iterations: iterations, warmup: config.roundTripWarmup), timeout: config.timeoutSeconds,
            placement: placement)
        let measured = interleave([ours, zmq, kept], repetitions: config.roundTripRepetitions, better: .lower)
        return [
            ScenarioResult(
                name: "roundtrip-ipc", title: "round trip, 64 B, ipc, two processes",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: .ratioAtMost(1.15).standing(.guarded),
                notes: ["\(config.roundTripRepetitions) × \(iterations) round trips per side; the echo is rlk-bench itself in a child process (named port via PortNameServer / raw PAIR)"],
                chartGroup: "ipc round trip"),
            ScenarioResult(
                name: "roundtrip-ipc-kept-reply", title: "the same, the echo keeping its send right to the reply port",
                unit: "µs", better: .lower, ours: measured[2], peer: measured[1], target: nil,
                notes: ["informational: the echo above replies to message.replyPort and drops it, as a server usually does; here it also keeps a reference to it between messages"],
                chartGroup: "ipc round trip"),
        ]
    }
}
