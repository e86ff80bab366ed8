import RunLoopKit

/// The `--stats` table: per destination port and msgid, over the last
/// second, messages/s, bytes/s, send-to-delivery latency p50 and p99, in 80
/// columns; under it, the tap events this sniffer missed in the interval
/// and in all, as its account has them (S-TAP-1). A missed event's port is
/// unknown, so drops are not split by row.
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
    }

    private var rows: [Key: Row] = [:]
    private var windowStart: Int64?

    /// Counts a message once: at its delivery if the sniffer sees deliveries,
    /// else at its send.
    mutating func add(_ event: PortTapEvent) {
        let key = Key(port: event.destination, msgid: event.msgid)
        var row = rows[key] ?? Row()
        if event.kind == .deliver || (event.kind == .send && event.trace == nil) {
            row.messages += 1
            row.bytes += event.dataBytes
        }
        if let latency = event.latency { row.latencies.append(latency) }
        rows[key] = row
        if windowStart == nil { windowStart = event.monotonicTime }
    }

    /// For a replayed recording: true when `time` is a second or more past
    /// the window's start, so the table is due.
    func isDue(at time: Int64) -> Bool {
        guard let windowStart else { return false }
        return time - windowStart >= 1_000_000_000
    }

    /// The table for the window that ends now, `seconds` long, with the
    /// tap events missed in it (`dropped`) and in all; starts the next.
    mutating func table(seconds: Double, clock: String, dropped: UInt64, droppedInAll: UInt64) -> String {
        let interval = seconds >= 0.995 && seconds <= 1.005 ? "second" : "\(Double(Int(seconds * 100)) / 100) s"
        var lines = ["portsniff --stats  \(clock)  (last \(interval))"]
        let widths = Self.widths
        lines.append(zip(["PORT", "MSGID", "MSG/S", "BYTES/S", "P50", "P99"], widths).map { pad($0, $1, right: $0 != "PORT") }.joined(separator: " "))
        if rows.isEmpty { lines.append("(no traffic)") }
        let scale = seconds > 0 ? seconds : 1
        for key in rows.keys.sorted() {
            let row = rows[key]!
            let sorted = row.latencies.sorted()
            func percentile(_ p: Double) -> String {
                guard !sorted.isEmpty else { return "-" }
                return LiveView.duration(sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)])
            }
            let cells = [key.port.cutInMiddle(to: widths[0]), "\(key.msgid)", "\(Int((Double(row.messages) / scale).rounded()))",
                         "\(Int((Double(row.bytes) / scale).rounded()))", percentile(0.5), percentile(0.99)]
            lines.append(zip(cells, widths).enumerated().map { pad($1.0, $1.1, right: $0 > 0) }.joined(separator: " "))
        }
        lines.append("tap events dropped: \(dropped) in the last \(interval), \(droppedInAll) in all")
        rows.removeAll(keepingCapacity: true)
        windowStart = nil
        return lines.joined(separator: "\n")
    }

    /// PORT, MSGID, MSG/S, BYTES/S, P50, P99: 79 columns with the spaces between.
    static let widths = [26, 10, 9, 11, 9, 9]

    private func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        guard text.count < width else { return text }
        let fill = String(repeating: " ", count: width - text.count)
        return right ? fill + text : text + fill
    }
}
