/// docs/performance.md ("Targets"): throughput, ipc, two processes; ≥ 0.5 × raw libzmq ipc.
struct ThroughputIPC: Scenario {
    let name = "throughput-ipc"
    let summary = "one-way PortMessage throughput to another process (ipc) vs raw libzmq PUSH/PULL over ipc"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let count = config.throughputMessages
        let ours = RLKProcessFlood(count: count, timeout: config.timeoutSeconds, placement: config.placement)
        let zmq = RawZMQProcessPeer(label: "raw libzmq PUSH/PULL ipc (C, child process)",
                                    mode: .throughput(count: count), timeout: config.timeoutSeconds, placement: config.placement)
        let measured = interleave([ours, zmq], repetitions: config.throughputRepetitions, better: .higher)
        return [
            ScenarioResult(
                name: "throughput-ipc", title: "one-way throughput, 64 B, ipc, two processes",
                unit: "msg/s", better: .higher, ours: measured[0], peer: measured[1], target: .ratioAtLeast(0.5).standing(.guarded),
                notes: ["\(config.throughputRepetitions) batches × \(count) messages per side; a batch ends when the child acknowledges its end marker"]),
        ]
    }
}
