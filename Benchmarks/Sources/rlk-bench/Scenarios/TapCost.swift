import CBenchPeers
import Glibc
import RunLoopKit

/// What PortTap costs a message: the per-message cost of sending a batch to
/// a port on a LoopThread (until all are delivered) with the tap on,
/// reporting to an endpoint where a reader takes every event (portsniff's
/// place), against the same with the tap off; for `Data` messages to a
/// `PortMessage` handler (`tap-cost`) and for messages sent from bytes and
/// read in place (`tap-cost-inplace`). docs/performance.md ("Targets"): ≤ 2 ×
/// the tap off, guarded. The CPU time of every thread of the process (the tap's and
/// the reader's included) is reported beside the wall time, and the events
/// the tap dropped in the measured batches, which must be none.
struct TapCost: Scenario {
    let name = "tap-cost"
    let summary = "per-message cost of port sends with PortTap on (reader attached) vs off, Data and in place"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let endpoint = RunDirectory.ipcEndpoint("tap.sock")
        guard let reader = bench_pull_reader_start(endpoint) else {
            let failed = Measurement(label: "tap on", samples: [], better: .lower, error: "could not bind the tap reader at \(endpoint)")
            return [ScenarioResult(name: "tap-cost", title: "tap on vs off", unit: "ns/msg", better: .lower, ours: failed, peer: nil, target: nil)]
        }
        var results: [ScenarioResult] = []
        for inPlace in [false, true] {
            let rowName = inPlace ? "tap-cost-inplace" : "tap-cost"
            let title = inPlace
                ? "per-message cost of sends from bytes, read in place on a LoopThread, tap on vs off"
                : "per-message cost of Data sends to a LoopThread's port, tap on vs off"
            let sink = PortFlood(label: "sink", count: config.tapMessages, timeout: config.timeoutSeconds,
                                 placement: config.placement, inPlace: inPlace)
            let on = TapToggle(enabled: true, endpoint: endpoint, sink: sink, count: config.tapMessages)
            let off = TapToggle(enabled: false, endpoint: endpoint, sink: sink, count: config.tapMessages)
            let readBefore = bench_pull_reader_events(reader)
            let measured = interleave([on, off], repetitions: config.tapRepetitions, better: .lower)
            PortTap.disable()
            sink.tearDown()
            // Let the tap thread hand over what it holds before counting.
            usleep(300_000)
            let read = bench_pull_reader_events(reader) - readBefore
            results.append(ScenarioResult(
                name: rowName, title: title, unit: "ns/msg", better: .lower,
                ours: measured[0], peer: measured[1], target: .ratioAtMost(2).standing(.guarded),
                notes: [
                    "\(config.tapRepetitions) batches × \(config.tapMessages) messages per side, interleaved; ratio = on / off",
                    "CPU time of all threads, per message (median of the measured batches): on \(on.medianCPU) ns, off \(off.medianCPU) ns",
                    "while on: \(read) events reached the reader; dropped by the tap in the measured batches: \(on.measuredDrops)",
                ]))
        }
        bench_pull_reader_stop(reader)
        return results
    }
}

/// One side of the tap comparison: switches the tap on or off, then sends a
/// batch through the shared sink. Per-message wall time in nanoseconds; it
/// also keeps the CPU time all threads used per message, and the events the
/// tap dropped, in each batch after the warm-up.
final class TapToggle: Contender {
    let label: String
    private let enabled: Bool
    private let endpoint: String
    private let sink: PortFlood
    private let count: Int
    private let owner: Bool
    private var cpuSamples: [Double] = []
    private var dropSamples: [UInt64] = []

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
        let dropsBefore = PortTap.droppedEventCount
        let cpuBefore = Self.processCPUNanoseconds()
        let messagesPerSecond = try sink.measure()[0]
        cpuSamples.append(Double(Self.processCPUNanoseconds() - cpuBefore) / Double(count))
        dropSamples.append(PortTap.droppedEventCount - dropsBefore)
        return [1e9 / messagesPerSecond]
    }

    /// The median CPU nanoseconds per message, the warm-up batch left out.
    var medianCPU: Int {
        let measured = cpuSamples.dropFirst().sorted()
        return measured.isEmpty ? 0 : Int(measured[measured.count / 2].rounded())
    }

    /// Events dropped in the measured batches (the warm-up left out).
    var measuredDrops: UInt64 { dropSamples.dropFirst().reduce(0, +) }

    /// User and system CPU time of every thread of the process.
    static func processCPUNanoseconds() -> UInt64 {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func nanoseconds(_ time: timeval) -> UInt64 { UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1_000 }
        return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
    }
}
