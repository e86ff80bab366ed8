/// One event's line in its parts, so that a line too wide for the terminal
/// gives up its least useful parts first: the data's bytes, then the middle
/// of the port (or callout) names down to `readableName` characters, then
/// the components, then the names down to `shortestName`. The columns before
/// the names, the msgid and the tail (a W3C trace id, latency with its unit, a failure's
/// reason, LATE) stay whole; only a terminal too narrow even for those cuts
/// the line's end.
struct EventLine {
    typealias Part = (text: String, colour: String?)

    let separator: String
    /// Time, pid, process, thread, event: fixed-width columns.
    var head: [Part] = []
    /// Source and destination (shown "a → b"), or what a loop ran.
    var names: [String] = []
    /// The msgid (`#N`), or a loop event's mode.
    var middle: [Part] = []
    /// `[N: B bytes, ports]`, and with --hex the data's first bytes.
    var components: (summary: String, bytes: String?)?
    /// W3C trace id, latency, reason, LATE.
    var tail: [Part] = []

    /// A name cut to this keeps enough of each end to tell it ("repl…-17").
    static let readableName = 8
    /// The shortest a name is cut to ("r…7"), to keep a reason whole.
    static let shortestName = 3

    func render(paint: (String, String) -> String) -> String {
        parts().map { part in part.colour.map { paint(part.text, $0) } ?? part.text }.joined(separator: separator)
    }

    func fitted(to width: Int, paint: (String, String) -> String) -> String {
        var line = self
        if line.visibleCount <= width { return line.render(paint: paint) }
        line.components?.bytes = nil
        for (dropComponents, floor) in [(false, Self.readableName), (true, Self.readableName), (true, Self.shortestName)] {
            if dropComponents { line.components = nil }
            // From the whole names each time: what the components gave up goes to the names.
            line.names = names
            line.names = Self.shrink(names, by: line.visibleCount - width, floor: floor)
            if line.visibleCount <= width { return line.render(paint: paint) }
        }
        // Narrower than the columns that stay: the end goes, uncoloured.
        let text = line.parts().map(\.text).joined(separator: separator)
        return String(text.prefix(max(0, width - 1))) + "…"
    }

    private var visibleCount: Int { parts().reduce(0) { $0 + $1.text.count } + separator.count * max(0, parts().count - 1) }

    private func parts() -> [Part] {
        var all = head
        if !names.isEmpty { all.append((names.joined(separator: " → "), nil)) }
        all += middle
        if let components { all.append((components.bytes.map { components.summary + " " + $0 } ?? components.summary, nil)) }
        return all + tail
    }

    /// `names` shortened by `excess` characters in all, each cut in its
    /// middle and none below `floor`: the longest give first.
    static func shrink(_ names: [String], by excess: Int, floor: Int) -> [String] {
        var lengths = names.map(\.count)
        var left = excess
        while left > 0 {
            guard let longest = lengths.indices.max(by: { lengths[$0] < lengths[$1] }),
                  lengths[longest] > floor else { break }
            lengths[longest] -= 1
            left -= 1
        }
        return zip(names, lengths).map { $0.cutInMiddle(to: $1) }
    }
}
