/// docs/performance.md ("Targets"): perform-on-thread throughput; ≥ 1.0 ×
/// SwiftNIO EventLoop.execute, guarded (no
/// regression against the commit before a change). Dispatch is shown beside it.
struct PerformThroughput: Scenario {
    let name = "perform-throughput"
    let summary = "RunLoop.perform throughput from one thread vs NIO EventLoop.execute and Dispatch async"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let (count, timeout, placement) = (config.performMessages, config.timeoutSeconds, config.placement)
        // Dispatch's serial queue in a fresh process each batch: in this
        // one its rate depends on what earlier scenarios left in Dispatch's
        // pool and Swift's default executor (docs/performance.md, "Perform,
        // actors and the main queue").
        let dispatch = InFreshProcess(["dispatch-flood", placement.mode.rawValue, String(count), String(Int(timeout.rounded(.up)))],
                                      timeout: timeout * 2 + 10)
        let measured = interleave([
            PerformFlood(count: count, timeout: timeout, placement: placement),
            NIOExecuteFlood(count: count, timeout: timeout, placement: placement),
            dispatch,
        ], repetitions: config.throughputRepetitions, better: .higher)
        let sizes = "\(config.throughputRepetitions) batches × \(count) empty blocks per side, interleaved; a batch ends when its last block has run"
        return [
            ScenarioResult(
                name: "perform-throughput", title: "perform-on-thread throughput (one thread queues, one loop runs)",
                unit: "blocks/s", better: .higher, ours: measured[0], peer: measured[1], target: .ratioAtLeast(1.0).standing(.guarded),
                notes: [sizes, "docs/performance.md, \"Targets\": ≥ 1.0×, guarded (no regression)"]),
            ScenarioResult(
                name: "perform-throughput-dispatch", title: "the same against Dispatch (one serial queue)",
                unit: "blocks/s", better: .higher, ours: measured[0], peer: measured[2], target: nil,
                notes: ["informational; Dispatch's batches each in a fresh process after a warm-up batch there; the queuing thread is pinned, and with both sides on one CPU (--placement same) Dispatch's pool threads with it; otherwise they run wherever Dispatch puts them"]),
        ]
    }
}
