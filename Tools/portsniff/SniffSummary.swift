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

    var text: String {
        var shown = "\(sends) send(s), \(deliveries) deliver(ies)"
        if failedSends > 0 { shown += ", \(failedSends) failed send(s)" }
        if dropsOnReceipt > 0 { shown += ", \(dropsOnReceipt) message(s) dropped on receipt" }
        if loopEvents > 0 { shown += ", \(loopEvents) loop event(s)" }
        var lines = ["portsniff: \(events) event(s) shown: \(shown), \(pairs) paired; \(account.totalDropped) tap event(s) dropped"]
        if malformedBatches > 0 { lines.append("  \(malformedBatches) batch(es) skipped: not the tap's format (another version's tap?)") }
        if lateCount > 0 { lines.append("  \(lateCount) event(s) came later than the reorder window (--window): shown, marked late") }
        for (process, entry) in account.entries.sorted(by: { $0.key < $1.key }) where entry.owed > 0 {
            let name = entry.name.map { " (\($0)\(entry.exited ? ", exited" : ""))" } ?? ""
            lines.append("  pid \(process.pid)\(name): events \(entry.firstOwed)-\(entry.lastOwed) owed (\(entry.owed)): \(entry.seen) received + \(entry.dropped) dropped")
        }
        let owing = account.entries.values.filter { $0.owed > 0 }
        if owing.count > 1 {
            let owed = owing.reduce(0) { $0 + $1.owed }, seen = owing.reduce(0) { $0 + min($1.seen, $1.owed) }
            lines.append("  in all, \(owing.count) processes: \(owed) owed: \(seen) received + \(owed - seen) dropped")
        }
        return lines.joined(separator: "\n")
    }
}
