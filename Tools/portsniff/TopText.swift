/// How `portsniff --top` writes its figures and fits its lines.
enum TopText {
    /// `count` in at most 6 characters (then k, M, G), rounded; `~` before an estimate.
    static func number(_ value: Double, estimated: Bool = false) -> String {
        let rounded = value.rounded()
        let text: String
        if rounded < 100_000 {
            text = "\(Int(rounded))"
        } else {
            let (scaled, unit) = rounded < 1e8 ? (rounded / 1e3, "k") : rounded < 1e11 ? (rounded / 1e6, "M") : (rounded / 1e9, "G")
            text = scaled < 1_000 ? "\(Double(Int(scaled * 10)) / 10)\(unit)" : "\(Int(scaled))\(unit)"
        }
        return (estimated ? "~" : "") + text
    }

    /// A latency in at most 6 characters: `850ns`, `44.6µs`, `358µs`, `1.2ms`, `2.5s`; `-` for none.
    static func latency(_ nanoseconds: Int64?) -> String {
        guard let value = nanoseconds else { return "-" }
        func scaled(_ unit: Double, _ suffix: String) -> String {
            let amount = Double(value) / unit
            return amount < 100 ? "\(Double(Int(amount * 10)) / 10)\(suffix)" : "\(Int(amount))\(suffix)"
        }
        if value < 1_000 { return "\(value)ns" }
        if value < 1_000_000 { return scaled(1e3, "µs") }
        if value < 1_000_000_000 { return scaled(1e6, "ms") }
        return scaled(1e9, "s")
    }

    static func uptime(_ nanoseconds: Int64) -> String {
        let seconds = max(0, nanoseconds / 1_000_000_000)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let days = seconds / 86_400
        let clock = "\(seconds / 3_600 % 24):\(two(seconds / 60 % 60)):\(two(seconds % 60))"
        return days > 0 ? "\(days)d \(clock)" : clock
    }

    static func percent(_ value: Double) -> String { "\(Double(Int((value * 10).rounded())) / 10)%" }

    /// A line cut to `width` columns, `…` where it was cut.
    static func fit(_ line: String, _ width: Int) -> String {
        line.count <= width ? line : String(line.prefix(max(0, width - 1))) + (width > 0 ? "…" : "")
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    static func padLeft(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    static func trimmed(_ line: String) -> String {
        var line = line
        while line.last == " " { line.removeLast() }
        return line
    }
}
