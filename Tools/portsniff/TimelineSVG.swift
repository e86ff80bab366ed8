import RunLoopKit

/// A timeline of events as an SVG picture: a track per thread (in the
/// order threads first appear), time left to right; with loop tracing, each
/// pass a pale band labelled with its number (passes too narrow for their
/// label are drawn as one band, "passes 12–19"), each sleep a paler one,
/// each callout a coloured bar by kind; each SEND and DELIVER a mark, each
/// pair an arrow from the send to the delivery labelled with its latency
/// where the label fits; failed sends and drops in red. A legend under the
/// title says what each mark is; the caption how many latency labels were
/// left out so that no two texts overlap (`TimelineLabels`). Every drawn
/// element has a class (`track`, `pass`, `pass-label`, `sleep`,
/// `callout`, `send`, `deliver`, `flow`, `latency`, `drop`, `legend`) and a
/// tooltip (`title`).
struct TimelineSVG {
    let events: [PortTapEvent]
    /// Events of the recording not drawn (past --max-events).
    let leftOut: Int

    static let width = 1200.0
    static let labelWidth = 200.0
    static let rightMargin = 30.0
    static let top = 80.0
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

    /// Passes of one track drawn as one band: from the first's start to the last's end.
    private struct PassGroup {
        var start: Int64
        var end: Int64
        var first: UInt64?
        var last: UInt64?
        var count: Int

        var label: String {
            guard count > 1 else { return first.map { "pass \($0)" } ?? "pass" }
            if let first, let last { return "passes \(first)–\(last)" }
            return "\(count) passes"
        }
    }

    func render() -> String {
        var tracks: [Int64: Track] = [:]
        var order: [Int64] = []
        func key(_ event: PortTapEvent) -> Int64 { Int64(event.pid) << 32 | Int64(UInt32(bitPattern: event.tid)) }
        for event in events where tracks[key(event)] == nil {
            tracks[key(event)] = Track(pid: event.pid, tid: event.tid, label: event.thread,
                                       process: "\(event.process ?? "?") \(event.pid)", index: order.count)
            order.append(key(event))
        }
        let start = events.map(\.monotonicTime).min() ?? 0
        let end = max(events.map { $0.monotonicTime + ($0.duration ?? 0) }.max() ?? 0, start + 1_000)
        let plotWidth = Self.width - Self.labelWidth - Self.rightMargin
        func x(_ time: Int64) -> Double { Self.labelWidth + Double(time - start) / Double(end - start) * plotWidth }
        func trackTop(_ event: PortTapEvent) -> Double { Self.top + Double(tracks[key(event)]!.index) * (Self.trackHeight + Self.trackGap) }
        let height = Self.top + Double(order.count) * (Self.trackHeight + Self.trackGap) + 40
        var labels = TimelineLabels()
        var svg: [String] = []
        svg.append(##"<svg xmlns="http://www.w3.org/2000/svg" width="\##(Self.number(Self.width))" height="\##(Self.number(height))" viewBox="0 0 \##(Self.number(Self.width)) \##(Self.number(height))" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"##)
        svg.append(##"<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#444"/></marker></defs>"##)
        svg.append(##"<rect x="0" y="0" width="100%" height="100%" fill="#ffffff"/>"##)
        svg.append(##"<text x="12" y="22" font-size="15" font-weight="bold">portsniff timeline</text>"##)
        labels.fix(TimelineLabels.box("portsniff timeline", x: 12, y: 22, size: 15, bold: true))
        svg += legend(into: &labels)
        svg += axis(start: start, end: end, x: x, height: height, labels: &labels)
        for key in order {
            let track = tracks[key]!
            let top = Self.top + Double(track.index) * (Self.trackHeight + Self.trackGap)
            let fill = track.index % 2 == 0 ? "#f4f6f8" : "#eceff3"
            // Cut to the label column, so that a long name never runs into the plot.
            let name = track.label.cutInMiddle(to: 22), process = "\(track.process) · tid \(track.tid)".cutInMiddle(to: 28)
            labels.fix(TimelineLabels.box(name, x: 10, y: top + 26, size: 12, bold: true))
            labels.fix(TimelineLabels.box(process, x: 10, y: top + 44, size: 12))
            svg.append(##"<g class="track"><rect x="0" y="\##(Self.number(top))" width="\##(Self.number(Self.width))" height="\##(Self.number(Self.trackHeight))" fill="\##(fill)"/>"##
                + ##"<text x="10" y="\##(Self.number(top + 26))" font-weight="bold">\##(Self.escaped(name))<title>\##(Self.escaped(track.label))</title></text>"##
                + ##"<text x="10" y="\##(Self.number(top + 44))" fill="#555">\##(Self.escaped(process))</text></g>"##)
        }
        // Loop work first, underneath: pass bands (each labelled), sleeps, callouts.
        for key in order {
            let passes = events.filter { $0.kind == .pass && $0.duration != nil && Self.trackKey($0) == key }
            for group in passGroups(passes, x: x) {
                let top = Self.top + Double(tracks[key]!.index) * (Self.trackHeight + Self.trackGap)
                let left = x(group.start), width = max(1, x(group.end) - left)
                let label = group.label
                let labelX = min(left + 2, Self.width - 4 - TimelineLabels.width(label, size: 10))
                labels.fix(TimelineLabels.box(label, x: labelX, y: top + 15, size: 10))
                svg.append(##"<rect class="pass" x="\##(Self.number(left))" y="\##(Self.number(top + 4))" width="\##(Self.number(width))" height="\##(Self.number(Self.trackHeight - 8))" fill="#dfe7f3" stroke="#b3c2d9" stroke-width="0.5"><title>\##(Self.escaped(label + " " + LiveView.duration(group.end - group.start)))</title></rect>"##)
                svg.append(##"<text class="pass-label" x="\##(Self.number(labelX))" y="\##(Self.number(top + 15))" font-size="10" fill="#4a5a70">\##(Self.escaped(label))</text>"##)
            }
        }
        for event in events where event.duration != nil && event.kind != .pass {
            let top = trackTop(event)
            let left = x(event.monotonicTime), width = max(1, x(event.monotonicTime + event.duration!) - left)
            let tip = Self.escaped("\(event.kind == .callout ? event.callout ?? "callout" : event.kind.rawValue) \(LiveView.duration(event.duration!))"
                + (event.origin.map { " " + $0 } ?? "") + " (\(event.mode ?? "-"))")
            if event.kind == .sleep {
                svg.append(##"<rect class="sleep" x="\##(Self.number(left))" y="\##(Self.number(top + 18))" width="\##(Self.number(width))" height="\##(Self.number(Self.trackHeight - 22))" fill="#fbfcfd" stroke="#d0d6de" stroke-width="0.5" stroke-dasharray="3,2"><title>\##(tip)</title></rect>"##)
            } else {
                let colour = Self.colour(ofCallout: event.callout ?? "")
                svg.append(##"<rect class="callout" x="\##(Self.number(left))" y="\##(Self.number(top + 20))" width="\##(Self.number(width))" height="24" fill="\##(colour)"><title>\##(tip)</title></rect>"##)
            }
        }
        var sends: [UInt64: (x: Double, y: Double)] = [:]
        var arrows: [String] = []
        for event in events where event.duration == nil {
            let top = trackTop(event), at = x(event.monotonicTime)
            switch event.kind {
            case .send, .deliver:
                let isSend = event.kind == .send
                let tip = Self.escaped("\(isSend ? "SEND" : "DELIVER") msgid \(event.msgid) \(event.source ?? "-") → \(event.destination)"
                    + (event.latency.map { " " + LiveView.duration($0) } ?? ""))
                svg.append(##"<rect class="\##(isSend ? "send" : "deliver")" x="\##(Self.number(at - 1.5))" y="\##(Self.number(top + 19))" width="3" height="\##(Self.number(Self.trackHeight - 21))" fill="\##(isSend ? "#0e9fb3" : "#22a04b")"><title>\##(tip)</title></rect>"##)
                // Under the pass labels' lane (the track's top 18 pixels), so that marks never cover them.
                let middle = top + (isSend ? 26 : Self.trackHeight - 10)
                guard let trace = event.trace else { break }
                if isSend {
                    sends[trace] = (at, middle)
                } else if let from = sends.removeValue(forKey: trace) {
                    arrows.append(##"<line class="flow" x1="\##(Self.number(from.x))" y1="\##(Self.number(from.y))" x2="\##(Self.number(at))" y2="\##(Self.number(middle))" stroke="#444" stroke-width="1.2" marker-end="url(#arrow)"><title>\##(tip)</title></line>"##)
                    if let latency = event.latency {
                        // Beside the arrow's middle, or a little above or below; left out if all are taken.
                        let text = LiveView.duration(latency)
                        // Moved left of the middle where it would run past the picture's right edge.
                        let labelX = min((from.x + at) / 2 + 4, Self.width - TimelineLabels.width(text, size: 10) - 2)
                        let labelY = (from.y + middle) / 2 + 3
                        if let y = labels.place(text, x: labelX, spots: [0, -11, 11, -22, 22].map { labelY + $0 }, size: 10) {
                            arrows.append(##"<text class="latency" x="\##(Self.number(labelX))" y="\##(Self.number(y))" font-size="10" fill="#333">\##(Self.escaped(text))</text>"##)
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
        if labels.leftOut > 0 { caption += "; \(labels.leftOut) latency label\(labels.leftOut == 1 ? "" : "s") not shown (no room)" }
        if leftOut > 0 { caption += "; \(leftOut) later events not drawn (--max-events)" }
        svg.append(##"<text class="caption" x="12" y="\##(Self.number(height - 14))" fill="#555">\##(Self.escaped(caption))</text>"##)
        svg.append("</svg>")
        return svg.joined(separator: "\n") + "\n"
    }

    private static func trackKey(_ event: PortTapEvent) -> Int64 { Int64(event.pid) << 32 | Int64(UInt32(bitPattern: event.tid)) }

    /// A track's passes, in time order, grouped so that each band is at
    /// least as wide as its label: a pass too narrow joins the next ones
    /// (and the last group, if still too narrow, the one before it).
    private func passGroups(_ passes: [PortTapEvent], x: (Int64) -> Double) -> [PassGroup] {
        var groups: [PassGroup] = []
        var current: PassGroup?
        for pass in passes.sorted(by: { $0.monotonicTime < $1.monotonicTime }) {
            let passEnd = pass.monotonicTime + pass.duration!
            if var group = current {
                group.end = max(group.end, passEnd)
                group.last = pass.passNumber
                group.count += 1
                current = group
            } else {
                current = PassGroup(start: pass.monotonicTime, end: passEnd, first: pass.passNumber, last: pass.passNumber, count: 1)
            }
            if let group = current, x(group.end) - x(group.start) >= TimelineLabels.width(group.label, size: 10) + 6 {
                groups.append(group)
                current = nil
            }
        }
        if let rest = current {
            if var previous = groups.popLast() {
                previous.end = max(previous.end, rest.end)
                previous.last = rest.last
                previous.count += rest.count
                groups.append(previous)
            } else {
                groups.append(rest)
            }
        }
        return groups
    }

    /// What each mark means, in a row under the title.
    private func legend(into labels: inout TimelineLabels) -> [String] {
        let items: [(text: String, swatch: String)] = [
            ("pass", ##"fill="#dfe7f3" stroke="#b3c2d9""##), ("sleep", ##"fill="#fbfcfd" stroke="#d0d6de" stroke-dasharray="3,2""##),
            ("source", ##"fill="#5b8fd6""##), ("timer", ##"fill="#e0a030""##), ("block", ##"fill="#9b59b6""##),
            ("job", ##"fill="#16a085""##), ("main queue", ##"fill="#c0392b""##), ("observer", ##"fill="#b0b8c4""##),
            ("SEND", ##"fill="#0e9fb3""##), ("DELIVER", ##"fill="#22a04b""##), ("message → latency", ""),
            ("failed send or drop", ##"fill="#d63031""##),
        ]
        var out = [##"<g class="legend" font-size="10">"##]
        var at = 12.0
        let baseline = 44.0
        for item in items {
            if item.swatch.isEmpty {
                out.append(##"<line x1="\##(Self.number(at))" y1="\##(Self.number(baseline - 4))" x2="\##(Self.number(at + 12))" y2="\##(Self.number(baseline - 4))" stroke="#444" stroke-width="1.2" marker-end="url(#arrow)"/>"##)
            } else {
                out.append(##"<rect x="\##(Self.number(at))" y="\##(Self.number(baseline - 9))" width="12" height="10" \##(item.swatch)/>"##)
            }
            labels.fix(TimelineLabels.box(item.text, x: at + 16, y: baseline, size: 10))
            out.append(##"<text x="\##(Self.number(at + 16))" y="\##(Self.number(baseline))" fill="#333">\##(Self.escaped(item.text))</text>"##)
            at += 16 + TimelineLabels.width(item.text, size: 10) + 12
        }
        out.append("</g>")
        return out
    }

    /// Ticks along the top, at a round step, labelled from the start.
    private func axis(start: Int64, end: Int64, x: (Int64) -> Double, height: Double, labels: inout TimelineLabels) -> [String] {
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
            let text = "+" + LiveView.duration(Int64(tick))
            // Right of its tick; a tick at the picture's right edge keeps its line only.
            if at + 2 + TimelineLabels.width(text, size: 10) <= Self.width - 2 {
                labels.fix(TimelineLabels.box(text, x: at + 2, y: Self.top - 12, size: 10))
                lines.append(##"<text x="\##(Self.number(at + 2))" y="\##(Self.number(Self.top - 12))" font-size="10" fill="#666">\##(Self.escaped(text))</text>"##)
            }
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
