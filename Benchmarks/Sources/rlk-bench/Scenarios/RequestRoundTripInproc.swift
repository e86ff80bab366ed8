/// Benchmarks/README.md ("What is measured against what"): the
/// sendRequest round trip is a row with no target yet, reported beside its raw-libzmq peer.
/// A plain thread calls `port.sendRequest` on a LoopThread's
/// port, whose handler replies to `message.replyPort`; the peer is libzmq's
/// own request-reply, REQ and REP between two C threads. The PAIR ping-pong
/// of `roundtrip-inproc` is shown beside it.
///
/// Why REQ/REP and not DEALER/ROUTER: sendRequest has one request in flight
/// per thread and its reply goes back to whoever asked (the reply port the
/// request carried); REQ/REP is exactly that in libzmq (the reply is routed
/// back by the envelope REQ adds, and REQ enforces one request at a time).
/// DEALER/ROUTER adds only what sendRequest does not do (several requests
/// in flight, the application handling the envelope), and costs the same
/// frames on the wire.
struct RequestRoundTripInproc: Scenario {
    let name = "request-roundtrip-inproc"
    let summary = "Port.sendRequest from a thread to a LoopThread's port (inproc) vs raw libzmq REQ/REP and PAIR; typed against untyped"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (iterations, warmup, placement) = (config.roundTripIterations, config.roundTripWarmup, config.placement)
        let ours = PortRequestRoundTrip(iterations: iterations, warmup: warmup, timeout: config.timeoutSeconds, placement: placement)
        let reqRep = RawZMQPingPong(
            label: "raw libzmq REQ/REP inproc (C, two threads)", sockets: .requestReply, endpoint: "inproc://rlk-bench-request",
            iterations: iterations, warmup: warmup, timeout: config.timeoutSeconds, placement: placement)
        let pair = RawZMQPingPong(
            label: "raw libzmq PAIR inproc (C, two threads)", endpoint: "inproc://rlk-bench-request-pair",
            iterations: iterations, warmup: warmup, timeout: config.timeoutSeconds, placement: placement)
        let typed = PortRequestRoundTrip(iterations: iterations, warmup: warmup, timeout: config.timeoutSeconds, placement: placement, typed: true)
        let measured = interleave([ours, reqRep, pair, typed], repetitions: config.roundTripRepetitions, better: .lower)
        let sizes = "\(config.roundTripRepetitions) × \(iterations) round trips per side, interleaved, after a warm-up repetition"
        return [
            ScenarioResult(
                name: "request-roundtrip-inproc", title: "sendRequest round trip, 64 B, a thread → a LoopThread's port, inproc",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: nil,
                notes: [sizes,
                        "no target yet (reported beside its raw-libzmq peer; Benchmarks/README.md, \"What is measured against what\")",
                        "ours: the asking thread runs its own loop in sendRequest's private mode until the reply comes; the peer: REQ (asker) and REP (echo)"],
                chartGroup: "request round trip"),
            ScenarioResult(
                name: "request-roundtrip-inproc-pair", title: "the same sendRequest round trip against raw libzmq PAIR",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[2], target: nil,
                notes: ["informational: PAIR is roundtrip-inproc's peer; REQ/REP adds an envelope frame and a state check"],
                chartGroup: "request round trip"),
            ScenarioResult(
                name: "typed-request-inproc", title: "typed sendRequest(_:as:) round trip against the same request over raw ports",
                unit: "µs", better: .lower, ours: measured[3], peer: measured[0], target: nil,
                notes: ["reported: what the coder costs (docs/performance.md, \"Typed messages\"); a Codable request of an id and the 64 bytes, answered by setRequestHandler with a reply of the same, against sendRequest with the 64 bytes as they are"],
                chartGroup: "request round trip"),
        ]
    }
}
