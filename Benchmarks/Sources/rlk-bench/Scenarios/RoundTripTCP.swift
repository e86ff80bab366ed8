import RunLoopKit

/// docs/performance.md ("Targets"): round trip over tcp between two
/// processes, CURVE on and off on both sides, against raw libzmq over tcp
/// in the same socket shape (≤ 1.15 ×); CURVE's own cost from the raw
/// pair; and 1,000 ports behind one endpoint against 1 (≤ 1.2 ×).
struct RoundTripTCP: Scenario {
    let name = "roundtrip-tcp"
    let summary = "PortMessage round trip to another process over tcp loopback (CURVE and plain) vs raw libzmq DEALER/ROUTER over tcp; 1,000 ports behind one endpoint vs 1"

    /// The ports behind the child's endpoint in the spread row.
    static let spreadPorts = 1_000

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (iterations, placement) = (config.roundTripIterations, config.placement)
        func ours(_ security: TCPEndpoint.Security, label: String, ports: Int = 1) -> PortPingPong {
            var connection: RLKChildConnection?
            return PortPingPong(
                label: label, transport: .tcp(.connectingOnly),
                iterations: iterations, warmup: config.roundTripWarmup, timeout: config.timeoutSeconds, placement: placement,
                spread: ports > 1 ? { connection?.tcpPorts ?? [] } : nil,
                makeEcho: {
                    let made = try RLKChildConnection(tag: "tcp-echo-\(ports)", cpu: placement.second, tcp: (security, ports))
                    connection = made
                    return (made.port, { connection?.close() })
                })
        }
        func raw(curve: Bool) -> RawZMQProcessPeer {
            RawZMQProcessPeer(
                label: "raw libzmq DEALER/ROUTER tcp\(curve ? ", CURVE" : "") (C, child process)",
                mode: .roundTrip(iterations: iterations, warmup: config.roundTripWarmup), transport: .tcp(curve: curve),
                timeout: config.timeoutSeconds, placement: placement)
        }
        let contenders: [any Contender] = [
            ours(.curve, label: "RunLoopKit Port (tcp, CURVE, LoopThread ↔ child process)"),
            raw(curve: true),
            ours(.plainText, label: "RunLoopKit Port (tcp, plain text, LoopThread ↔ child process)"),
            raw(curve: false),
            ours(.curve, label: "RunLoopKit Port (tcp, CURVE), pings spread over \(Self.spreadPorts) ports behind one endpoint",
                 ports: Self.spreadPorts),
        ]
        let measured = interleave(contenders, repetitions: config.roundTripRepetitions, better: .lower)
        let notes = ["\(config.roundTripRepetitions) × \(iterations) round trips per side over tcp loopback; the echo is rlk-bench itself in a child process (its tcp port passed over ipc / a raw ROUTER listening, dialled by a DEALER that says hello, the shape of ours)"]
        return [
            ScenarioResult(
                name: "roundtrip-tcp", title: "round trip, 64 B, tcp with CURVE, two processes",
                unit: "µs", better: .lower, ours: measured[0], peer: measured[1], target: .ratioAtMost(1.15).standing(.due),
                notes: notes, chartGroup: "tcp round trip"),
            ScenarioResult(
                name: "roundtrip-tcp-plain", title: "round trip, 64 B, tcp in plain text, two processes",
                unit: "µs", better: .lower, ours: measured[2], peer: measured[3], target: .ratioAtMost(1.15).standing(.due),
                notes: notes, chartGroup: "tcp round trip"),
            ScenarioResult(
                name: "roundtrip-tcp-curve-cost", title: "CURVE's own cost: raw libzmq tcp round trip with CURVE against without",
                unit: "µs", better: .lower, ours: measured[1], peer: measured[3], target: nil,
                notes: ["informational: both sides raw libzmq; the ratio is what CURVE adds a round trip"], chartGroup: "tcp round trip"),
            ScenarioResult(
                name: "ports-behind-endpoint", title: "round trip spread over \(Self.spreadPorts) tcp ports behind one endpoint, against 1 port",
                unit: "µs", better: .lower, ours: measured[4], peer: measured[0], target: .ratioAtMost(1.2).standing(.due),
                notes: ["the peer column is RunLoopKit's own one-port tcp round trip (CURVE) of this run"], chartGroup: "tcp round trip"),
        ]
    }
}
