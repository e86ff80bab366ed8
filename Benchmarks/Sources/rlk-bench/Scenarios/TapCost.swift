import CBenchPeers
import Glibc
import RunLoopKit

/// What PortTap costs a message: the per-message cost of sending a batch to
/// a port on a LoopThread (until all are delivered) with the tap on,
/// reporting to an endpoint where a reader takes everything (portsniff's
/// place), against the same with the tap off. docs/design.md: ≤ 2 × the tap off
/// (not due in issues 12 and 9); the README promises one atomic load and one
/// branch when off, and a bounded cost that never blocks the sender when on.
struct TapCost: Scenario {
    let name = "tap-cost"
    let summary = "per-message cost of port sends with PortTap on (reader attached) vs off"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let endpoint = RunDirectory.ipcEndpoint("tap.sock")
        let title = "per-message cost of sends to a LoopThread's port, tap on vs off"
        guard let reader = bench_pull_reader_start(endpoint) else {
            let failed = Measurement(label: "tap on", samples: [], better: .lower, error: "could not bind the tap reader at \(endpoint)")
            return [ScenarioResult(name: "tap-cost", title: title, unit: "ns/msg", better: .lower, ours: failed, peer: nil, target: nil)]
        }
        let sink = PortFlood(label: "sink", count: config.tapMessages, timeout: config.timeoutSeconds, placement: config.placement)
        let dropped0 = PortTap.droppedEventCount
        let measured = interleave([
            TapToggle(enabled: true, endpoint: endpoint, sink: sink, count: config.tapMessages),
            TapToggle(enabled: false, endpoint: endpoint, sink: sink, count: config.tapMessages),
        ], repetitions: config.tapRepetitions, better: .lower)
        PortTap.disable()
        sink.tearDown()
        // Let the tap thread hand over what it queued before the reader goes.
        usleep(300_000)
        let read = bench_pull_reader_stop(reader)
        let dropped = PortTap.droppedEventCount - dropped0
        return [
            ScenarioResult(
                name: "tap-cost", title: title, unit: "ns/msg", better: .lower,
                ours: measured[0], peer: measured[1], target: .ratioAtMost(2).standing(.notDue),
                notes: ["\(config.tapRepetitions) batches × \(config.tapMessages) messages per side, interleaved; ratio = on / off",
                        "while on: \(read) events reached the reader, \(dropped) were dropped by the tap (bounded queue; the sender never waits for it)"]),
        ]
    }
}

/// One side of the tap comparison: switches the tap on or off, then sends a
/// batch through the shared sink. Per-message cost in nanoseconds.
final class TapToggle: Contender {
    let label: String
    private let enabled: Bool
    private let endpoint: String
    private let sink: PortFlood
    private let count: Int
    private let owner: Bool

    init(enabled: Bool, endpoint: String, sink: PortFlood, count: Int) {
        self.enabled = enabled
        self.endpoint = endpoint
        self.sink = sink
        self.count = count
        // The "on" side sets the sink up (once) and starts the tap pipeline.
        owner = enabled
        label = enabled ? "PortTap on (a reader takes every event)" : "PortTap off"
    }

    func setUp() throws {
        guard owner else { return }
        try sink.setUp()
        // The first enable starts the tap thread and waits for the reader to connect.
        try PortTap.enable(endpoint: endpoint)
        PortTap.disable()
    }

    func measure() throws -> [Double] {
        if enabled { try PortTap.enable(endpoint: endpoint) } else { PortTap.disable() }
        guard PortTap.isEnabled == enabled else { throw BenchError("PortTap.isEnabled is not \(enabled)") }
        let messagesPerSecond = try sink.measure()[0]
        return [1e9 / messagesPerSecond]
    }
}
