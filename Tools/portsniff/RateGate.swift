import RunLoopKit

/// Keeps the live view readable at any rate: above `maxLinesPerSecond`
/// lines in a second, the view stops printing one line per event and
/// prints one line a second instead, saying how many events it stands for,
/// of which kinds, over how long an interval, and why, until a second
/// comes with no more than the limit. A quiet interval prints nothing.
/// Only what is shown is gated: `--write` records every event, and the
/// final summary counts every one, saying how many were only counted here.
struct RateGate {
    /// Lines a second at most (0: no limit).
    let maxLinesPerSecond: Int
    private var windowStart: Int64 = 0
    private var inWindow = 0
    private var summarising = false
    /// Events of the window not shown as lines, and their kinds.
    private var hidden = 0
    private var counts: [PortTapEvent.Kind: Int] = [:]

    init(maxLinesPerSecond: Int) { self.maxLinesPerSecond = maxLinesPerSecond }

    /// Whether the event at `now` (monotonic nanoseconds) gets its line.
    /// Also returns the summary line of a second that just ended, if the
    /// view was summarising in it.
    mutating func admit(_ event: PortTapEvent, now: Int64) -> (show: Bool, summary: String?) {
        guard maxLinesPerSecond > 0 else { return (true, nil) }
        let summary = roll(now: now)
        inWindow += 1
        if inWindow > maxLinesPerSecond { summarising = true }
        if summarising {
            hidden += 1
            counts[event.kind, default: 0] += 1
        }
        return (!summarising, summary)
    }

    /// At the end: the summary of the second under way, if it was summarising.
    mutating func flush(now: Int64) -> String? {
        guard maxLinesPerSecond > 0, summarising else { return nil }
        return roll(now: now, force: true)
    }

    /// Called every second: the summary of the second that ended, if any.
    mutating func tick(now: Int64) -> String? { maxLinesPerSecond > 0 ? roll(now: now) : nil }

    /// Starts a new window when a second has passed; returns the last
    /// window's summary when it was summarising.
    private mutating func roll(now: Int64, force: Bool = false) -> String? {
        guard force || now - windowStart >= 1_000_000_000 else { return nil }
        var line: String?
        if hidden > 0 {
            let kinds = PortTapEvent.Kind.allCases.compactMap { kind -> String? in
                guard let count = counts[kind], count > 0 else { return nil }
                return "\(count) \(Self.label(kind))"
            }
            let seconds = Double(max(0, now - windowStart)) / 1e9
            line = "… \(hidden) events in \(Self.interval(seconds)) not shown as lines (\(kinds.joined(separator: ", "))): "
                + "over \(maxLinesPerSecond) lines/s (--max-rate)"
        }
        // Back to lines once a whole second stayed under the limit.
        summarising = summarising && inWindow > maxLinesPerSecond
        windowStart = now
        inWindow = 0
        hidden = 0
        counts.removeAll(keepingCapacity: true)
        return line
    }

    /// An interval as a line states it: "1.00 s", "0.35 s".
    static func interval(_ seconds: Double) -> String {
        let hundredths = Int((seconds * 100).rounded())
        return "\(hundredths / 100).\(hundredths % 100 < 10 ? "0" : "")\(hundredths % 100) s"
    }

    private static func label(_ kind: PortTapEvent.Kind) -> String {
        switch kind {
        case .send: "SEND"
        case .deliver: "DELIVER"
        case .sendFailed: "SENDERR"
        case .messageDropped: "DROPPED"
        case .pass: "PASS"
        case .sleep: "SLEEP"
        case .callout: "CALLOUT"
        }
    }
}
