import RunLoopKit

/// A timeline of events as an SVG picture: a track per thread (in the
/// order threads first appear), time left to right; with loop tracing, each
/// pass a pale band, each sleep a paler one, each callout a coloured bar by
/// kind; each SEND and DELIVER a mark, each pair an arrow from the send to
/// the delivery labelled with its latency; failed sends and drops in red.
/// Every drawn element has a class (`track`, `pass`, `sleep`, `callout`,
/// `send`, `deliver`, `flow`, `latency`, `drop`) and a tooltip (`title`).
struct TimelineSVG {
    let events: [PortTapEvent]
    /// Events of the recording not drawn (past --max-events).
    let leftOut: Int

    static let width = 1200.0
    static let labelWidth = 200.0
    static let rightMargin = 30.0
    static let top = 64.0
    static let trackHeight = 64.0
    static let trackGap = 8.0

    /// Callout colours, by `RunLoop.CalloutKind`'s description.
    static func colour(ofCallout name: String) -> String {
        if name.hasPrefix("observer") { return "#b0b8c4" }
        switch name {
        case "socketSource": return "#5b8fd6"
        case "timer": return "#e0a030"
        case "block": return "#9b59b6"
        case "job": return "#16a085"
        case "mainQueue": return "#c0392b"
        default: return "#7f8c8d"
        }
    }

    private struct Track {
        let pid: Int32
        let tid: Int32
        let label: String
        let process: String
        let index: Int
    }

    func render() -> String {
        var tracks: [Int64: Track] = [:]
        var order: [Int64] = []
        for event in events {
            let key = Int64(event.pid) << 32 | Int64(UInt32(bitPattern: event.tid))
            if tracks[key] == nil {
                tracks[key] = Track(pid: event.pid, tid: event.tid, label: event.thread,
                                    process: "\(event.process ?? "?") \(event.pid)", index: order.count)
                order.append(key)
            }
        }
        let start = events.map(\.monotonicTime).min() ?? 0
        let end = max(events.map { $0.monotonicTime + ($0.duration ?? 0) }.max() ?? 0, start + 1_000)
        let plotWidth = Self.width - Self.labelWidth - Self.rightMargin
        func x(_ time: Int64) -> Double { Self.labelWidth + Double(time - start) / Double(end - start) * plotWidth }
        func y(_ event: PortTapEvent) -> Double {
            let index = tracks[Int64(event.pid) << 32 | Int64(UInt32(bitPattern: event.tid))]!.index
            return Self.top + Double(index) * (Self.trackHeight + Self.trackGap)
        }
        let height = Self.top + Double(order.count) * (Self.trackHeight + Self.trackGap) + 40
        var svg: [String] = []
        svg.append(##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(Self.number(Self.width))" height="\##(Self.number(height))" viewBox="0 0 \##(Self.number(Self.width)) \##(Self.number(height))" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"##)
        svg.append(##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#444"/></marker></defs>"##)
        svg.append(##"<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>"##)
        svg.append(##"<text x="12" y="22" font-size="15" font-weight="bold">portsniff timeline</text>"##)
        svg += axis(start: start, end: end, x: x, height: height)
        for key in order {
            let track = tracks[key]!
            let top = Self.top + Double(track.index) * (Self.trackHeight + Self.trackGap)
            let fill = track.index % 2 == 0 ? "#f4f6f8" : "#eceff3"
            svg.append(##"<g class="track"><rect x="0" y="\##(Self.number(top))" width="\##(Self.number(Self.width))" height="\##(Self.number(Self.trackHeight))" fill="\##(fill)"/>"##
                + ##"<text x="10" y="\##(Self.number(top + 26))" font-weight="bold">\##(Self.escaped(track.label))</text>"##
                + ##"<text x="10" y="\##(Self.number(top + 44))" fill="#555">\##(Self.escaped(track.process)) · tid \##(track.tid)</text></g>"##)
        }
        // Loop work first, underneath; then drops, messages and arrows on top.
        for event in events where event.duration != nil {
            let top = y(event)
            let left = x(event.monotonicTime), width = max(1, x(event.monotonicTime + event.duration!) - left)
            let tip = Self.escaped("\(event.kind == .callout ? event.callout ?? "callout" : event.kind.rawValue) \(LiveView.duration(event.duration!))"
                + (event.origin.map { " " + $0 } ?? "") + " (\(event.mode ?? "-"))")
            switch event.kind {
            case .pass:
                svg.append(##"<rect class="pass" x="\##(Self.number(left))" y="\##(Self.number(top + 4))" width="\##(Self.number(width))" height="\##(Self.number(Self.trackHeight - 8))" fill="#dfe7f3" stroke="#b3c2d9" stroke-width="0.5"><title>\##(tip)</title></rect>"##)
            case .sleep:
                svg.append(##"<rect class="sleep" x="\##(Self.number(left))" y="\##(Self.number(top + 4))" width="\##(Self.number(width))" height="\##(Self.number(Self.trackHeight - 8))" fill="#fbfcfd" stroke="#d0d6de" stroke-width="0.5" stroke-dasharray="3,2"><title>\##(tip)</title></rect>"##)
            default:
                let colour = Self.colour(ofCallout: event.callout ?? "")
                svg.append(##"<rect class="callout" x="\##(Self.number(left))" y="\##(Self.number(top + 20))" width="\##(Self.number(width))" height="24" fill="\##(colour)"><title>\##(tip)</title></rect>"##)
            }
        }
        var sends: [UInt64: (x: Double, y: Double)] = [:]
        var arrows: [String] = []
        for event in events where event.duration == nil {
            let top = y(event), at = x(event.monotonicTime)
            switch event.kind {
            case .send, .deliver:
                let isSend = event.kind == .send
                let tip = Self.escaped("\(isSend ? "SEND" : "DELIVER") msgid \(event.msgid) \(event.source ?? "-") → \(event.destination)"
                    + (event.latency.map { " " + LiveView.duration($0) } ?? ""))
                svg.append(##"<rect class="\##(isSend ? "send" : "deliver")" x="\##(Self.number(at - 1.5))" y="\##(Self.number(top + 2))" width="3" height="\##(Self.number(Self.trackHeight - 4))" fill="\##(isSend ? "#0e9fb3" : "#22a04b")"><title>\##(tip)</title></rect>"##)
                let middle = top + (isSend ? 14 : Self.trackHeight - 14)
                if let trace = event.trace {
                    if isSend {
                        sends[trace] = (at, middle)
                    } else if let from = sends.removeValue(forKey: trace) {
                        arrows.append(##"<line class="flow" x1="\##(Self.number(from.x))" y1="\##(Self.number(from.y))" x2="\##(Self.number(at))" y2="\##(Self.number(middle))" stroke="#444" stroke-width="1.2" marker-end="url(#arrow)"/>"##)
                        if let latency = event.latency {
                            // Staggered, so that the labels of close pairs do not overprint.
                            let labelX = (from.x + at) / 2 + 4, labelY = (from.y + middle) / 2 - 3 + Double(arrows.count % 3) * 11
                            arrows.append(##"<text class="latency" x="\##(Self.number(labelX))" y="\##(Self.number(labelY))" font-size="10" fill="#333">\##(Self.escaped(LiveView.duration(latency)))</text>"##)
                        }
                    }
                }
            case .sendFailed, .messageDropped:
                let tip = Self.escaped("\(event.kind == .sendFailed ? "SEND FAILED" : "DROPPED") msgid \(event.msgid) → \(event.destination): \(event.reason ?? "")")
                svg.append(##"<path class="drop" d="M\##(Self.number(at - 6)),\##(Self.number(top + 8)) L\##(Self.number(at + 6)),\##(Self.number(top + 8)) L\##(Self.number(at)),\##(Self.number(top + 20)) z" fill="#d63031"><title>\##(tip)</title></path>"##)
            default:
                break
            }
        }
        svg += arrows
        let threads = order.count, processes = Set(events.map(\.pid)).count
        var caption = "\(events.count) events on \(threads) thread\(threads == 1 ? "" : "s") of \(processes) process\(processes == 1 ? "" : "es")"
        if let first = events.first { caption += ", from " + TimeStamper.clock(first.time) }
        caption += ", \(LiveView.duration(end - start)) in all"
        if leftOut > 0 { caption += "; \(leftOut) later events not drawn (--max-events)" }
        svg.append(##"<text x="12" y="\##(Self.number(height - 14))" fill="#555">\##(Self.escaped(caption))</text>"##)
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }

    /// Ticks along the top, at a round step, labelled from the start.
    private func axis(start: Int64, end: Int64, x: (Int64) -> Double, height: Double) -> [String] {
        let span = Double(end - start)
        var step = 1.0
        for candidate in [1.0, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9, 2e9, 5e9, 1e10] where span / candidate <= 10 {
            step = candidate
            break
        }
        var lines: [String] = []
        var tick = 0.0
        while tick <= span {
            let at = x(start + Int64(tick))
            lines.append(##"<line x1="\##(Self.number(at))" y1="\##(Self.number(Self.top - 8))" x2="\##(Self.number(at))" y2="\##(Self.number(height - 36))" stroke="#dde1e6" stroke-width="1"/>"##)
            lines.append(##"<text x="\##(Self.number(at + 2))" y="\##(Self.number(Self.top - 12))" font-size="10" fill="#666">+\##(Self.escaped(LiveView.duration(Int64(tick))))</text>"##)
            tick += step
        }
        return lines
    }

    static func number(_ value: Double) -> String {
        let rounded = (value * 10).rounded() / 10
        return rounded == rounded.rounded() ? String(Int(rounded)) : String(rounded)
    }

    static func escaped(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            default: out.append(character)
            }
        }
        return out
    }
}
