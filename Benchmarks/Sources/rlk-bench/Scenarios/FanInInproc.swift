/// Benchmarks/README.md ("What is measured against what"): fan-in is
/// a row with no target yet, reported beside its raw-libzmq peer.
/// Four plain threads send 64-byte PortMessages to one port on a LoopThread,
/// against four C threads with a PUSH socket each into one PULL.
struct FanInInproc: Scenario {
    let name = "fanin-inproc"
    let summary = "4 sender threads → one LoopThread's port (inproc) vs raw libzmq 4 PUSH threads → one PULL"

    static let senders = 4

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (count, placement, senders) = (config.throughputMessages, config.placement, Self.senders)
        let ours = PortFanIn(label: "RunLoopKit Port (\(senders) sender threads → LoopThread)", senders: senders, count: count,
                             timeout: config.timeoutSeconds, placement: placement)
        let zmq = RawZMQFanInThreads(label: "raw libzmq \(senders) PUSH threads → 1 PULL inproc (C)",
                                     endpoint: "inproc://rlk-bench-fanin", senders: senders, count: count,
                                     timeout: config.timeoutSeconds, placement: placement)
        let measured = interleave([ours, zmq], repetitions: config.throughputRepetitions, better: .higher)
        let placed = switch placement.mode {
        case .cross: "senders on CPU 0, receiver on CPU 1"
        case .same: "senders and receiver on CPU 0"
        case .free: "threads unpinned"
        }
        return [
            ScenarioResult(
                name: "fanin-inproc", title: "fan-in throughput, \(senders) sender threads → 1 port, 64 B, inproc",
                unit: "msg/s", better: .higher, ours: measured[0], peer: measured[1], target: nil,
                notes: ["\(config.throughputRepetitions) batches × \(count) messages (\(count / senders) per sender) per side, interleaved; \(placed)",
                        "no target yet (reported beside its raw-libzmq peer; Benchmarks/README.md, \"What is measured against what\")",
                        "ours: the senders share the port's one send right (one PUSH socket behind a lock); the peer: a PUSH socket per thread"]),
        ]
    }
}
