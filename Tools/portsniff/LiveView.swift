import Glibc
import RunLoopKit

/// One line per event: time (as `-t` / `--time` says), pid, process name,
/// thread, what happened, source and
/// destination ports, msgid, the components (count, data bytes, ports;
/// with --hex the first data component's leading bytes, in hex and as
/// text), the W3C trace id of a message sent in a trace and, on a
/// delivery paired with its send, the latency; failed sends and drops with
/// their reason.
///
/// On a terminal the view fits its width: a header row names the columns,
/// a terminal under 120 columns gets the narrow layout (milliseconds, shorter
/// names, cut in their middle), and a line that would still be wider gives
/// up its least useful parts first (`EventLine`). Written to
/// a pipe or a file, lines are whole and there is no header: one line per
/// event, for scripts.
struct LiveView {
    let colour: Bool
    let hexBytes: Int?
    /// The terminal's width; nil when the output is not a terminal.
    var width: Int?
    /// How lines are stamped (`-t`, `--time`).
    var timeFormat: TimeFormat = .absolute
    private var stamper: TimeStamper?

    init(colour: Bool, hexBytes: Int?, width: Int?, timeFormat: TimeFormat = .absolute) {
        self.colour = colour
        self.hexBytes = hexBytes
        self.width = width
        self.timeFormat = timeFormat
    }

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
        let narrow = (width ?? Int.max) < 120
        return narrow
            ? Layout(time: timeFormat.width(milliseconds: true), pid: 6, name: 8, thread: 10, milliseconds: true, separator: " ", narrow: true)
            : Layout(time: timeFormat.width(milliseconds: false), pid: 7, name: 15, thread: 15, milliseconds: false, separator: "  ", narrow: false)
    }

    /// The header row, for a terminal; nil otherwise.
    func header() -> String? {
        guard width != nil else { return nil }
        let layout = layout
        let rest = layout.narrow ? "SRC → DST #MSGID [N: B] LATENCY" : "SOURCE → DESTINATION  MSGID  COMPONENTS  LATENCY"
        var columns = layout.time > 0 ? [pad(timeFormat.title, layout.time)] : []
        columns += [pad("PID", layout.pid), pad("PROCESS", layout.name), pad("THREAD", layout.thread), "EVENT  ", rest]
        let text = columns.joined(separator: layout.separator)
        return fit(text, "1")
    }

    mutating func line(for event: PortTapEvent, late: Bool = false) -> String {
        let layout = layout
        if stamper == nil || stamper?.milliseconds != layout.milliseconds {
            stamper = TimeStamper(format: timeFormat, milliseconds: layout.milliseconds)
        }
        var line = EventLine(separator: layout.separator)
        if let stamp = stamper?.stamp(wall: event.time, monotonic: event.monotonicTime) { line.head.append((pad(stamp, layout.time), nil)) }
        line.head.append((pad("\(event.pid)", layout.pid), nil))
        line.head.append((pad((event.process ?? "?").cutInMiddle(to: layout.name), layout.name), nil))
        line.head.append((pad(event.thread.cutInMiddle(to: layout.thread), layout.thread), nil))
        let (kind, kindColour) = switch event.kind {
        case .send: ("SEND   ", "36")
        case .deliver: ("DELIVER", "32")
        case .sendFailed: ("SENDERR", "31")
        case .messageDropped: ("DROPPED", "31")
        case .pass: ("PASS   ", "34")
        case .sleep: ("SLEEP  ", "34")
        case .callout: ("CALLOUT", "34")
        }
        line.head.append((kind, kindColour))
        if let duration = event.duration {
            // Loop tracing: what ran, in which mode, for how long.
            var what = event.callout ?? (event.kind == .pass ? "pass \(event.passNumber ?? 0)" : "sleep")
            if let origin = event.origin { what += " " + origin }
            line.names = [what]
            line.middle = [(event.mode ?? "-", nil)]
            line.tail.append((Self.duration(duration), "33"))
        } else {
            line.names = [Self.named(event.source ?? "-", peer: event.sourcePeer), Self.named(event.destination, peer: event.destinationPeer)]
            // An actor's message says what it is to its call instead of its msgid.
            let middle = event.actorCall?.text ?? (layout.narrow ? "#\(event.msgid)" : "msgid \(event.msgid)")
            line.middle = [(middle, event.actorCall == nil ? nil : "1")]
            line.components = components(of: event)
        }
        if let id = event.w3cTraceID { line.tail.append((Self.w3cTrace(id, narrow: layout.narrow), "35")) }
        if let latency = event.latency { line.tail.append((Self.duration(latency), "33")) }
        if let reason = event.reason { line.tail.append((reason, "31")) }
        if late { line.tail.append(("LATE", "35")) }
        guard let width else { return line.render(paint: paint) }
        return line.fitted(to: width, paint: paint)
    }

    /// A line of the view's own (a summary of a busy second), cut to the width.
    func note(_ text: String) -> String { fit(text, "33") }

    func dropLine(pid: Int32, newDrops: UInt64, total: UInt64) -> String {
        let text = "!! pid \(pid) dropped \(newDrops) tap event(s) (\(total) in all): the sniffer or the tap queue could not keep up"
        return fit(text, "31")
    }

    /// `[N: B bytes]`: the components, their data's size, their ports;
    /// with --hex, the first data component's leading bytes in hex and as
    /// text, as `tcpdump -X` shows them.
    private func components(of event: PortTapEvent) -> (summary: String, bytes: String?) {
        var text = "[\(event.componentCount): \(event.dataBytes)B"
        if event.portCount > 0 { text += ", \(event.portCount) port\(event.portCount == 1 ? "" : "s")" }
        text += "]"
        guard let hexBytes, hexBytes > 0, !event.head.isEmpty else { return (text, nil) }
        let head = Array(event.head.prefix(hexBytes))
        return (text, PortTapEvent.hex(head) + " |" + Self.printable(head) + "|")
    }

    /// The W3C trace a message was sent in: its whole id, which a tracer's
    /// search takes; the narrow layout keeps its first 8 digits, as
    /// tracers' short ids do (`--json` and recordings keep it whole).
    static func w3cTrace(_ id: String, narrow: Bool) -> String {
        "trace " + (narrow ? String(id.prefix(8)) : id)
    }

    /// Bytes as text, `.` for what does not print (as `tcpdump -X` shows
    /// them beside the hex).
    /// A port's name, with where it is over tcp: "name@tcp://host:port"
    /// (its process's instance is in the recording and `--json`).
    static func named(_ name: String, peer: String?) -> String {
        guard let peer, let endpoint = peer.split(separator: " ").first else { return name }
        return endpoint == "connecting" ? name + "@(connecting only)" : name + "@" + endpoint
    }

    static func printable(_ bytes: [UInt8]) -> String {
        String(bytes.map { $0 >= 0x20 && $0 < 0x7F ? Character(UnicodeScalar($0)) : "." })
    }

    /// `text` painted, cut to the width first: a colour code is never cut,
    /// so a cut line keeps its first words and resets its colour.
    private func fit(_ text: String, _ code: String) -> String {
        guard let width, text.count > width else { return paint(text, code) }
        return paint(String(text.prefix(width - 1)) + "…", code)
    }

    private func paint(_ text: String, _ code: String) -> String {
        colour ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }

    private func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    /// The width of the terminal on `fd`, nil if it is not one.
    static func terminalWidth(_ fd: Int32) -> Int? {
        guard isatty(fd) == 1 else { return nil }
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    static func duration(_ nanoseconds: Int64) -> String {
        if nanoseconds < 1_000 { return "\(nanoseconds) ns" }
        if nanoseconds < 1_000_000 { return "\(Double(nanoseconds / 100) / 10) µs" }
        return "\(Double(nanoseconds / 100_000) / 10) ms"
    }
}
