import RunLoopKit

/// What the sniffer saw, printed at the end (Ctrl-C, --count reached, or the
/// end of a recording): the events shown, and per process what it was owed
/// and missed (`TapAccount`).
struct SniffSummary {
    var events = 0
    var sends = 0
    var deliveries = 0
    var failedSends = 0
    var dropsOnReceipt = 0
    var pairs = 0
    /// Loop tracing's passes, sleeps and callouts.
    var loopEvents = 0
    /// Every received event is counted here, shown or filtered out.
    var account = TapAccount()
    /// Events that came later than the reorder window (shown, marked late).
    var lateCount = 0
    /// Batches skipped because they were not the tap's format.
    var malformedBatches = 0
    /// Events that passed the filters but were only counted in a rate
    /// line (--max-rate), not shown as lines of their own.
    var onlyCounted = 0
    /// Where a recording cut short stopped being read.
    var cutAt: String?
    /// Which processes the account's lines speak of (--pid, --process).
    var showsProcess: (TapAccount.Process, String?) -> Bool = { _, _ in true }

    /// Records an event that was shown.
    mutating func add(_ event: PortTapEvent) {
        events += 1
        switch event.kind {
        case .send: sends += 1
        case .deliver: deliveries += 1
        case .sendFailed: failedSends += 1
        case .messageDropped: dropsOnReceipt += 1
        case .pass, .sleep, .callout: loopEvents += 1
        }
        if event.latency != nil { pairs += 1 }
    }

    /// The summary, each line within 80 columns for the usual figures.
    var text: String {
        var kinds = ["\(sends) send(s)", "\(deliveries) deliver(ies)"]
        if failedSends > 0 { kinds.append("\(failedSends) failed send(s)") }
        if dropsOnReceipt > 0 { kinds.append("\(dropsOnReceipt) dropped on receipt") }
        if loopEvents > 0 { kinds.append("\(loopEvents) loop event(s)") }
        kinds.append("\(pairs) paired")
        var lines = ["portsniff: \(events) event(s) matched: " + kinds.joined(separator: ", ")]
        if onlyCounted > 0 {
            lines.append("  \(events - onlyCounted) shown as lines, \(onlyCounted) only counted in rate lines (--max-rate)")
        }
        let accounted = account.entries.filter { showsProcess($0.key, $0.value.name) }
        lines.append("  \(accounted.values.reduce(0) { $0 + $1.dropped }) tap event(s) dropped")
        if let cutAt { lines.append("  the recording is cut short: read up to its \(cutAt)") }
        if malformedBatches > 0 { lines.append("  \(malformedBatches) batch(es) skipped: not the tap's format") }
        if lateCount > 0 { lines.append("  \(lateCount) event(s) later than the window (--window): shown, marked late") }
        for (process, entry) in accounted.sorted(by: { $0.key < $1.key }) where entry.owed > 0 {
            let name = entry.name.map { " (\($0.cutInMiddle(to: 16))\(entry.exited ? ", exited" : ""))" } ?? ""
            lines.append("  pid \(process.pid)\(name): events \(entry.firstOwed)-\(entry.lastOwed) owed (\(entry.owed)): "
                + "\(min(entry.seen, entry.owed)) received + \(entry.dropped) dropped")
        }
        let owing = accounted.values.filter { $0.owed > 0 }
        if owing.count > 1 {
            let owed = owing.reduce(0) { $0 + $1.owed }, seen = owing.reduce(0) { $0 + min($1.seen, $1.owed) }
            lines.append("  in all, \(owing.count) processes: \(owed) owed: \(seen) received + \(owed - seen) dropped")
        }
        return lines.joined(separator: "\n")
    }
}
