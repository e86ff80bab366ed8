import RunLoopKit

/// The `--stats` table: per destination port and msgid, over the last
/// second, messages/s, bytes/s, send-to-delivery latency p50 and p99, and the
/// tap events dropped. Drops are counted per process; a row shows those its
/// process reported with the row's events.
struct StatsView {
    private struct Key: Hashable, Comparable {
        let port: String
        let msgid: UInt32
        static func < (lhs: Key, rhs: Key) -> Bool { (lhs.port, lhs.msgid) < (rhs.port, rhs.msgid) }
    }

    private struct Row {
        var messages = 0
        var bytes = 0
        var latencies: [Int64] = []
        var drops: UInt64 = 0
    }

    private var rows: [Key: Row] = [:]
    private var windowStart: Int64?

    /// Counts a message once: at its delivery if the sniffer sees deliveries,
    /// else at its send.
    mutating func add(_ event: PortTapEvent, newDrops: UInt64) {
        let key = Key(port: event.destination, msgid: event.msgid)
        var row = rows[key] ?? Row()
        if event.kind == .deliver || (event.kind == .send && event.trace == nil) {
            row.messages += 1
            row.bytes += event.dataBytes
        }
        if let latency = event.latency { row.latencies.append(latency) }
        row.drops += newDrops
        rows[key] = row
        if windowStart == nil { windowStart = event.monotonicTime }
    }

    /// For a replayed recording: true when `time` is a second or more past
    /// the window's start, so the table is due.
    func isDue(at time: Int64) -> Bool {
        guard let windowStart else { return false }
        return time - windowStart >= 1_000_000_000
    }

    /// The table for the window that ends now, `seconds` long; starts the next.
    mutating func table(seconds: Double, clock: String) -> String {
        var lines = ["portsniff --stats  \(clock)  (last \(seconds >= 0.995 && seconds <= 1.005 ? "second" : "\(Double(Int(seconds * 100)) / 100) s"))"]
        let header = [pad("PORT", 28), pad("MSGID", 8, right: true), pad("MSG/S", 10, right: true), pad("BYTES/S", 12, right: true),
                      pad("P50", 10, right: true), pad("P99", 10, right: true), pad("DROPS", 8, right: true)]
        lines.append(header.joined(separator: " "))
        if rows.isEmpty { lines.append("(no traffic)") }
        let scale = seconds > 0 ? seconds : 1
        for key in rows.keys.sorted() {
            let row = rows[key]!
            let sorted = row.latencies.sorted()
            func percentile(_ p: Double) -> String {
                guard !sorted.isEmpty else { return "-" }
                return LiveView.duration(sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)])
            }
            lines.append([
                pad(key.port, 28), pad("\(key.msgid)", 8, right: true),
                pad("\(Int((Double(row.messages) / scale).rounded()))", 10, right: true),
                pad("\(Int((Double(row.bytes) / scale).rounded()))", 12, right: true),
                pad(percentile(0.5), 10, right: true), pad(percentile(0.99), 10, right: true),
                pad("\(row.drops)", 8, right: true),
            ].joined(separator: " "))
        }
        rows.removeAll(keepingCapacity: true)
        windowStart = nil
        return lines.joined(separator: "\n")
    }

    private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        guard text.count < width else { return text }
        let fill = String(repeating: " ", count: width - text.count)
        return right ? fill + text : text + fill
    }
}
