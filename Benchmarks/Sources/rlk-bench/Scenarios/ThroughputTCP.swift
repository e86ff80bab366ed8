import RunLoopKit

/// docs/performance.md ("Targets"): one-way throughput over tcp between
/// two processes, CURVE on and off, against raw libzmq over tcp in the same
/// socket shape (≥ 0.5 ×).
struct ThroughputTCP: Scenario {
    let name = "throughput-tcp"
    let summary = "one-way PortMessage throughput to another process over tcp loopback (CURVE and plain) vs raw libzmq DEALER/ROUTER over tcp"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (count, placement) = (config.throughputMessages, config.placement)
        func raw(curve: Bool) -> RawZMQProcessPeer {
            RawZMQProcessPeer(
                label: "raw libzmq DEALER → ROUTER tcp\(curve ? ", CURVE" : "") (C, child process)",
                mode: .throughput(count: count), transport: .tcp(curve: curve), timeout: config.timeoutSeconds, placement: placement)
        }
        let contenders: [any Contender] = [
            RLKProcessFlood(count: count, timeout: config.timeoutSeconds, placement: placement, tcp: .curve),
            raw(curve: true),
            RLKProcessFlood(count: count, timeout: config.timeoutSeconds, placement: placement, tcp: .plainText),
            raw(curve: false),
        ]
        let measured = interleave(contenders, repetitions: config.throughputRepetitions, better: .higher)
        let notes = ["\(config.throughputRepetitions) batches × \(count) messages per side over tcp loopback; a batch ends when the child acknowledges its end marker"]
        return [
            ScenarioResult(
                name: "throughput-tcp", title: "one-way throughput, 64 B, tcp with CURVE, two processes",
                unit: "msg/s", better: .higher, ours: measured[0], peer: measured[1], target: .ratioAtLeast(0.5).standing(.due), notes: notes),
            ScenarioResult(
                name: "throughput-tcp-plain", title: "one-way throughput, 64 B, tcp in plain text, two processes",
                unit: "msg/s", better: .higher, ours: measured[2], peer: measured[3], target: .ratioAtLeast(0.5).standing(.due), notes: notes),
        ]
    }
}
