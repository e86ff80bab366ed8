import RunLoopKit

/// One row of `portsniff --top`'s table (`TopView`): a port, a process or
/// a thread, counting the events of the second being measured, and the
/// figures of the last closed one.
struct TopRow {
    /// A row's figures for the last closed second.
    struct Figures {
        /// Events a second, counting those missed.
        var rate = 0.0
        /// Messages a second, of those seen.
        var messages = 0.0
        /// Data bytes a second, of the messages seen.
        var bytes = 0.0
        /// Events missed a second.
        var drops = 0.0
        /// Whether `rate` and `drops` are estimates (a figure scaled from
        /// what was seen; one not scaled is exact, and has no `~`).
        var rateEstimated = false
        var dropsEstimated = false
        var p50: Int64?
        var p99: Int64?
        /// Events since the row appeared, counting those missed; and those
        /// missed; each an estimate once a second of it was.
        var totalEvents: UInt64 = 0
        var totalDrops: UInt64 = 0
        var totalEventsEstimated = false
        var totalDropsEstimated = false

        var anyEstimated: Bool { rateEstimated || dropsEstimated || totalEventsEstimated || totalDropsEstimated }
    }

    /// A process's second, per event it received: what it owed (its
    /// rate, at least 1) and what its numbers prove missed. A row's
    /// events of the process, scaled by these, are its share of them, so
    /// that a process's rows add up to its own figures.
    struct Ratios {
        var owed = 1.0
        var dropped = 0.0
    }

    /// What a row counted in the second being measured.
    private struct Window {
        var events = 0
        /// Events its process's numbers proved missed, counted with the
        /// event shown after them (a process row's only).
        var missed = 0
        /// Events by the process that reported them: a port's events come
        /// from its senders and its receiver, each with its own drops.
        var eventsByProcess: [TapAccount.Process: Int] = [:]
        var messages = 0
        var bytes = 0
        var latencies: [Int64] = []
        /// The messages already counted: a message sent and delivered
        /// within one row counts once there.
        var traces: Set<UInt64> = []
    }

    var name: String
    /// Shown after the name when the column is wide enough: a thread's process.
    var context = ""
    /// The pid of a process row, the tid of a thread row.
    let id: Int32?
    private var window = Window()
    var figures = Figures()
    /// Estimated totals, accumulated second by second.
    var estimatedEvents = 0.0
    var estimatedDrops = 0.0
    /// Closed seconds without an event.
    var idleSeconds = 0
    /// Every process whose events the row counted: a row leaves the table
    /// with the last of them (`TopView`).
    private(set) var contributors: Set<TapAccount.Process> = []
    /// The process's events and missed events in the second being measured.
    var windowEvents: Int { window.events }
    var windowMissed: Int { window.missed }

    init(name: String, id: Int32?) {
        self.name = name
        self.id = id
    }

    /// Counts one event of `process` in the second being measured.
    mutating func count(_ event: PortTapEvent, from process: TapAccount.Process, missed: Int = 0) {
        window.events += 1
        window.missed += missed
        if !contributors.contains(process) { contributors.insert(process) }
        window.eventsByProcess[process, default: 0] += 1
        if event.kind == .send || event.kind == .deliver, TopView.isNew(event.trace, in: &window.traces) {
            window.messages += 1
            window.bytes += event.dataBytes
        }
        if event.kind == .deliver, let latency = event.latency { window.latencies.append(latency) }
    }

    /// The figures measured from what was seen; rates and drops left at zero.
    func measured(seconds: Double) -> Figures {
        var figures = Figures()
        figures.messages = Double(window.messages) / seconds
        figures.bytes = Double(window.bytes) / seconds
        let sorted = window.latencies.sorted()
        func percentile(_ p: Double) -> Int64? {
            sorted.isEmpty ? nil : sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
        }
        figures.p50 = percentile(0.5)
        figures.p99 = percentile(0.99)
        return figures
    }

    /// Closes the second for a row whose rate is estimated: each process's
    /// events in it scaled by that process's ratios.
    mutating func estimate(seconds: Double, ratios: [TapAccount.Process: Ratios]) {
        var figures = measured(seconds: seconds)
        var scaled = 0.0, dropped = 0.0
        for (process, events) in window.eventsByProcess {
            let ratio = ratios[process] ?? Ratios()
            scaled += Double(events) * ratio.owed
            dropped += Double(events) * ratio.dropped
        }
        // Seen events alone are exact: only a process that owed more makes a figure an estimate.
        figures.rateEstimated = scaled > Double(window.events) + 0.5
        figures.dropsEstimated = dropped >= 0.5
        figures.rate = scaled / seconds
        figures.drops = dropped / seconds
        estimatedEvents += scaled
        estimatedDrops += dropped
        figures.totalEvents = UInt64(estimatedEvents.rounded())
        figures.totalDrops = UInt64(max(0, estimatedDrops).rounded())
        figures.totalEventsEstimated = self.figures.totalEventsEstimated || figures.rateEstimated
        figures.totalDropsEstimated = self.figures.totalDropsEstimated || figures.dropsEstimated
        idleSeconds = window.events > 0 ? 0 : idleSeconds + 1
        self.figures = figures
        window = Window()
    }

    /// Closes the second for a process row: its events shown and those its
    /// numbers proved missed, exact unless filters hide part of its events
    /// (`estimated`); `exited`, whether its count file says it has exited.
    mutating func settle(seconds: Double, estimated: Bool, exited: Bool) {
        var figures = measured(seconds: seconds)
        let owed = Double(window.events + window.missed)
        figures.rate = owed / seconds
        figures.drops = Double(window.missed) / seconds
        figures.rateEstimated = estimated && window.missed > 0
        figures.dropsEstimated = estimated && window.missed > 0
        estimatedEvents += owed
        estimatedDrops += Double(window.missed)
        figures.totalEvents = UInt64(estimatedEvents)
        figures.totalDrops = UInt64(estimatedDrops)
        figures.totalEventsEstimated = self.figures.totalEventsEstimated || figures.rateEstimated
        figures.totalDropsEstimated = self.figures.totalDropsEstimated || figures.dropsEstimated
        idleSeconds = window.events > 0 ? 0 : idleSeconds + 1
        // An exited process leaves once its last events were shown, as in htop.
        if exited && idleSeconds > 0 { idleSeconds = TopView.idleSecondsKept + 1 }
        self.figures = figures
        window = Window()
    }
}
