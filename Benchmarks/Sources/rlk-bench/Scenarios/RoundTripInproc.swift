/// docs/performance.md ("Targets"): round trip, 64 B PortMessage, two loop threads, inproc;
/// ≤ 1.15 × raw libzmq (PAIR, C), guarded. The OS floor is shown beside it.
struct RoundTripInproc: Scenario {
    let name = "roundtrip-inproc"
    let summary = "PortMessage round trip between two LoopThreads (inproc) vs raw libzmq PAIR and the OS floor"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (iterations, placement) = (config.roundTripIterations, config.placement)
        let ours = PortPingPong(
            label: "RunLoopKit Port (two LoopThreads)", transport: .inproc,
            iterations: iterations, warmup: config.roundTripWarmup, timeout: config.timeoutSeconds, placement: placement,
            makeEcho: { try PortPingPong.threadEcho(name: "bench-pong", transport: .inproc, cpu: placement.second) })
        let zmq = RawZMQPingPong(
            label: "raw libzmq PAIR inproc (C, two threads)", endpoint: "inproc://rlk-bench-roundtrip",
            iterations: iterations, warmup: config.roundTripWarmup, timeout: config.timeoutSeconds, placement: placement)
        let floor = EventfdPingPong(iterations: iterations, warmup: config.roundTripWarmup, timeout: config.timeoutSeconds,
                                    placement: placement)
        let polled = RawZMQPingPong(
            label: "raw libzmq PAIR inproc, each side in epoll on ZMQ_FD (C, two threads)", sockets: .pairPolled,
            endpoint: "inproc://rlk-bench-roundtrip-polled", iterations: iterations, warmup: config.roundTripWarmup,
            timeout: config.timeoutSeconds, placement: placement)
        let measured = interleave([ours, zmq, floor, polled], repetitions: config.roundTripRepetitions, better: .lower)
        let sizes = "\(config.roundTripRepetitions) × \(iterations) round trips per side, interleaved, after a warm-up repetition"
        return [
            ScenarioResult(
                name: "roundtrip-inproc", title: "round trip, 64 B PortMessage, two loop threads, inproc",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: .ratioAtMost(1.15).standing(.guarded),
                notes: [sizes, "≤ 1.15× raw libzmq (the aim: ≤ 1.0× raw libzmq served from epoll, the -polled row): docs/performance.md, \"Targets\""], chartGroup: "inproc round trip"),
            ScenarioResult(
                name: "roundtrip-inproc-floor", title: "the same round trip against the OS floor (eventfd + poll)",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[2], target: nil,
                notes: ["informational: what any cross-thread round trip costs on this kernel"],
                chartGroup: "inproc round trip"),
            ScenarioResult(
                name: "roundtrip-inproc-polled", title: "the same round trip against raw libzmq served as a loop serves it (epoll on ZMQ_FD)",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[3], target: nil,
                notes: ["informational: a blocking receive waits in libzmq's own poll; a loop that also serves timers, "
                        + "blocks and other sources waits in epoll and needs one more non-blocking receive per message "
                        + "to re-arm ZMQ_FD (docs/performance.md)"],
                chartGroup: "inproc round trip"),
        ]
    }
}
