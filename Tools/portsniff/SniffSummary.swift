import RunLoopKit

/// What the sniffer saw, printed at the end (Ctrl-C, --count reached, or the
/// end of a recording).
struct SniffSummary {
    var events = 0
    var sends = 0
    var deliveries = 0
    var pairs = 0
    var dropsByPid: [Int32: UInt64] = [:]

    /// Records an event; returns how many drops it newly reveals for its process.
    mutating func add(_ event: PortTapEvent, latency: Int64?) -> UInt64 {
        events += 1
        if event.kind == .send { sends += 1 } else { deliveries += 1 }
        if latency != nil { pairs += 1 }
        let previous = dropsByPid[event.pid] ?? 0
        if event.dropped > previous {
            dropsByPid[event.pid] = event.dropped
            return event.dropped - previous
        }
        if dropsByPid[event.pid] == nil { dropsByPid[event.pid] = event.dropped }
        return 0
    }

    var text: String {
        let drops = dropsByPid.values.reduce(0, +)
        var lines = ["portsniff: \(events) event(s): \(sends) send(s), \(deliveries) deliver(ies), \(pairs) paired; \(drops) tap event(s) dropped"]
        for (pid, count) in dropsByPid.sorted(by: { $0.key < $1.key }) where count > 0 {
            lines.append("  pid \(pid): \(count) dropped")
        }
        return lines.joined(separator: "\n")
    }
}
