import Glibc
import RunLoopKit

/// One line per event: time, pid, process name, thread, what happened,
/// source and destination ports, msgid, the components (kinds and sizes,
/// with --hex their first bytes and those bytes as text) and, for a pair
/// seen at both ends, the latency; failed sends and drops with their reason.
///
/// On a terminal the view fits its width: a header row names the columns,
/// a terminal under 120 columns gets the narrow layout (milliseconds, shorter
/// names), and a line that would still be wider is cut with "…". Written to
/// a pipe or a file, lines are whole and there is no header: one line per
/// event, for scripts.
struct LiveView {
    let colour: Bool
    let hexBytes: Int?
    /// The terminal's width; nil when the output is not a terminal.
    var width: Int?

    /// Column widths of the two layouts. The narrow one (under 120
    /// columns) also puts one space between columns and writes the msgid
    /// as `#N`, so that a message's line fits 80 columns.
    private struct Layout {
        let time, pid, name, thread: Int
        let milliseconds: Bool
        let separator: String
        let narrow: Bool
    }

    private var layout: Layout {
        (width ?? Int.max) < 120
            ? Layout(time: 12, pid: 6, name: 8, thread: 8, milliseconds: true, separator: " ", narrow: true)
            : Layout(time: 15, pid: 7, name: 15, thread: 15, milliseconds: false, separator: "  ", narrow: false)
    }

    /// The header row, for a terminal; nil otherwise.
    func header() -> String? {
        guard width != nil else { return nil }
        let layout = layout
        let rest = layout.narrow ? "SOURCE → DESTINATION #MSGID COMPONENTS" : "SOURCE → DESTINATION  MSGID  COMPONENTS  LATENCY"
        let columns = [pad("TIME", layout.time), pad("PID", layout.pid), pad("PROCESS", layout.name), pad("THREAD", layout.thread),
                       "EVENT  ", rest]
        let text = columns.joined(separator: layout.separator)
        return fit(paint(text, "1"), visible: text.count)
    }

    func line(for event: PortTapEvent, latency: Int64?, process: String, late: Bool = false) -> String {
        let layout = layout
        var parts: [(text: String, colour: String?)] = []
        parts.append((Self.clock(event.time, milliseconds: layout.milliseconds), nil))
        parts.append((pad("\(event.pid)", layout.pid), nil))
        parts.append((pad(cut(process, layout.name), layout.name), nil))
        parts.append((pad(cut(event.thread, layout.thread), layout.thread), nil))
        let (kind, kindColour) = switch event.kind {
        case .send: ("SEND   ", "36")
        case .deliver: ("DELIVER", "32")
        case .sendFailed: ("SENDERR", "31")
        case .messageDropped: ("DROPPED", "31")
        }
        parts.append((kind, kindColour))
        parts.append(("\(event.source ?? "-") → \(event.destination)", nil))
        parts.append((layout.narrow ? "#\(event.msgid)" : "msgid \(event.msgid)", nil))
        parts.append(("[" + event.components.map(component).joined(separator: ", ") + "]", nil))
        if let latency { parts.append((Self.duration(latency), "33")) }
        if let reason = event.reason { parts.append((reason, "31")) }
        if late { parts.append(("LATE", "35")) }
        let visible = parts.map(\.text).joined(separator: layout.separator)
        guard let width, visible.count > width else {
            return parts.map { part in part.colour.map { paint(part.text, $0) } ?? part.text }.joined(separator: layout.separator)
        }
        // Too wide: cut, without colour codes to count around.
        return String(visible.prefix(width - 1)) + "…"
    }

    func dropLine(pid: Int32, newDrops: UInt64, total: UInt64) -> String {
        let text = "!! pid \(pid) dropped \(newDrops) tap event(s) (\(total) in all): the sniffer or the tap queue could not keep up"
        return fit(paint(text, "31"), visible: text.count)
    }

    private func component(_ component: PortTapEvent.Component) -> String {
        if component.kind == .port { return "port \(component.head ?? "?")" }
        var text = "data \(component.size)B"
        if let hexBytes, hexBytes > 0, let head = component.head {
            let hex = String(head.prefix(hexBytes * 2))
            text += " " + hex + " |" + Self.printable(hex) + "|"
        }
        return text
    }

    /// The bytes of a hex string as text, `.` for what does not print
    /// (as `tcpdump -X` shows them beside the hex).
    static func printable(_ hex: String) -> String {
        var text = ""
        var index = hex.startIndex
        while index < hex.endIndex, let next = hex.index(index, offsetBy: 2, limitedBy: hex.endIndex) {
            let byte = UInt8(hex[index..<next], radix: 16) ?? 0
            text.append(byte >= 0x20 && byte < 0x7F ? Character(UnicodeScalar(byte)) : ".")
            index = next
        }
        return text
    }

    private func fit(_ painted: String, visible: Int) -> String {
        guard let width, visible > width else { return painted }
        return String(painted.prefix(width - 1)) + "…"
    }

    private func paint(_ text: String, _ code: String) -> String {
        colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    private func cut(_ text: String, _ width: Int) -> String {
        text.count <= width ? text : String(text.prefix(width - 1)) + "…"
    }

    /// The width of the terminal on `fd`, nil if it is not one.
    static func terminalWidth(_ fd: Int32) -> Int? {
        guard isatty(fd) == 1 else { return nil }
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// HH:MM:SS.micros (or .millis) in local time.
    static func clock(_ nanoseconds: Int64, milliseconds: Bool = false) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let (fraction, digits) = milliseconds
            ? ((nanoseconds % 1_000_000_000) / 1_000_000, 3) : ((nanoseconds % 1_000_000_000) / 1_000, 6)
        let fractionText = String(fraction)
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))."
            + String(repeating: "0", count: max(0, digits - fractionText.count)) + fractionText
    }

    static func duration(_ nanoseconds: Int64) -> String {
        if nanoseconds < 1_000 { return "\(nanoseconds) ns" }
        if nanoseconds < 1_000_000 { return "\(Double(nanoseconds / 100) / 10) µs" }
        return "\(Double(nanoseconds / 100_000) / 10) ms"
    }
}
