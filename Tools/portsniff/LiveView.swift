import Glibc
import RunLoopKit

/// One line per event: time, pid, thread, send or deliver, source and
/// destination ports, msgid, the components (kinds and sizes, with --hex
/// their first bytes) and, for a pair seen at both ends, the latency.
struct LiveView {
    let colour: Bool
    let hexBytes: Int?

    func line(for event: PortTapEvent, latency: Int64?) -> String {
        var parts: [String] = []
        parts.append(Self.clock(event.time))
        parts.append(pad("\(event.pid)", 7))
        parts.append(pad(event.thread, 15))
        let (kind, colourCode) = switch event.kind {
        case .send: ("SEND   ", "36")
        case .deliver: ("DELIVER", "32")
        case .sendFailed: ("SENDERR", "31")
        case .dropped: ("DROPPED", "31")
        }
        parts.append(paint(kind, colourCode))
        parts.append("\(event.source ?? "-") → \(event.destination)")
        parts.append("msgid \(event.msgid)")
        parts.append("[" + event.components.map(component).joined(separator: ", ") + "]")
        if let reason = event.reason { parts.append(paint(reason, "31")) }
        if let latency { parts.append(paint(Self.duration(latency), "33")) }
        return parts.joined(separator: "  ")
    }

    func dropLine(pid: Int32, newDrops: UInt64, total: UInt64) -> String {
        paint("!! pid \(pid) dropped \(newDrops) tap event(s) (\(total) in all): the sniffer or the tap queue could not keep up", "31")
    }

    private func component(_ component: PortTapEvent.Component) -> String {
        if component.kind == .port { return "port \(component.head ?? "?")" }
        var text = "data \(component.size)B"
        if let hexBytes, hexBytes > 0, let head = component.head {
            text += " " + String(head.prefix(hexBytes * 2))
        }
        return text
    }

    private func paint(_ text: String, _ code: String) -> String {
        colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// HH:MM:SS.micros in local time.
    static func clock(_ nanoseconds: Int64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let micros = (nanoseconds % 1_000_000_000) / 1_000
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let microText = String(micros)
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))."
            + String(repeating: "0", count: max(0, 6 - microText.count)) + microText
    }

    static func duration(_ nanoseconds: Int64) -> String {
        if nanoseconds < 1_000 { return "\(nanoseconds) ns" }
        if nanoseconds < 1_000_000 { return "\(Double(nanoseconds / 100) / 10) µs" }
        return "\(Double(nanoseconds / 100_000) / 10) ms"
    }
}
