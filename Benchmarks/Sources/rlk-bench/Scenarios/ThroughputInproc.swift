/// docs/performance.md ("Targets"): one-way throughput, 64 B, inproc; ≥ 0.5 × raw libzmq,
/// guarded (the aim, in place: ≥ 0.9 ×).
struct ThroughputInproc: Scenario {
    let name = "throughput-inproc"
    let summary = "one-way PortMessage throughput to a LoopThread (inproc) vs raw libzmq PUSH/PULL"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (count, placement) = (config.throughputMessages, config.placement)
        let ours = PortFlood(label: "RunLoopKit Port (one sender → LoopThread)", count: count, timeout: config.timeoutSeconds,
                             placement: placement)
        let zmq = RawZMQFlood(label: "raw libzmq PUSH/PULL inproc (C)", endpoint: "inproc://rlk-bench-throughput",
                              count: count, timeout: config.timeoutSeconds, placement: placement)
        let polled = RawZMQFlood(label: "raw libzmq PUSH/PULL inproc, PULL in epoll on ZMQ_FD (C)", polled: true,
                                 endpoint: "inproc://rlk-bench-throughput-polled", count: count,
                                 timeout: config.timeoutSeconds, placement: placement)
        let inPlace = PortFlood(label: "RunLoopKit Port, sent from bytes, read in place", count: count,
                                timeout: config.timeoutSeconds, placement: placement, inPlace: true)
        let wireSized = RawZMQFlood(label: "raw libzmq PUSH/PULL inproc, \(Self.portFrameBytes)-byte frames (C)",
                                    frameBytes: Self.portFrameBytes, endpoint: "inproc://rlk-bench-throughput-wire-sized",
                                    count: count, timeout: config.timeoutSeconds, placement: placement)
        let measured = interleave([ours, zmq, polled, inPlace, wireSized], repetitions: config.throughputRepetitions,
                                  better: .higher)
        return [
            ScenarioResult(
                name: "throughput-inproc", title: "one-way throughput, 64 B, inproc",
                unit: "msg/s", better: .higher, ours: measured[0], peer: measured[1], target: .ratioAtLeast(0.5).standing(.guarded),
                notes: ["\(config.throughputRepetitions) batches × \(count) messages per side, interleaved"]),
            ScenarioResult(
                name: "throughput-inproc-polled", title: "the same throughput against raw libzmq received as a loop receives (epoll on ZMQ_FD)",
                unit: "msg/s", better: .higher, ours: measured[0], peer: measured[2], target: nil,
                notes: ["informational: what serving the PULL socket from an event loop costs raw libzmq itself (docs/performance.md)"]),
            ScenarioResult(
                name: "throughput-inproc-in-place", title: "the same stream sent from bytes and read in place (no Data on either side)",
                unit: "msg/s", better: .higher, ours: measured[3], peer: measured[1], target: .ratioAtLeast(0.5).standing(.guarded),
                notes: ["Port.send(msgid:bytes:…) and Port.setInPlaceMessageHandler; the handler reads each payload; same target as the row above (the aim here: ≥ 0.9×)"]),
            ScenarioResult(
                name: "throughput-inproc-wire-sized",
                title: "the in-place stream against raw libzmq sending as many bytes per message as the port puts on the wire",
                unit: "msg/s", better: .higher, ours: measured[3], peer: measured[4], target: nil,
                notes: ["informational: \(Self.portFrameBytes)-byte frames cross glibc's fastbin limit where 64-byte ones do not (docs/performance.md)"]),
        ]
    }

    /// The frame a port sends for one 64-byte data component, packed
    /// (docs/wire-format.md): a 12-byte header, one kind byte, a 4-byte
    /// record length, then the 64 bytes.
    static let portFrameBytes = 12 + 1 + 4 + 64
}
