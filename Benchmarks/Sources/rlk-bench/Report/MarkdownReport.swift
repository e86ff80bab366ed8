/// `--markdown`: the summary as a Markdown table, for docs/performance.md
/// (printed after the text report, or alone with --json's stdout rules).
enum MarkdownReport {
    static func table(_ rows: [ScenarioResult]) -> String {
        var lines = [
            "| scenario | ours | centre | p99 | peer | centre | p99 | ratio | target | met |",
            "|---|---|---:|---:|---|---:|---:|---:|---|---|",
        ]
        for row in rows {
            let ours = row.ours.summary, peer = row.peer?.summary
            let peerText: (String, String, String)
            if let measured = row.peer {
                if let peer, let centre = measured.centre {
                    peerText = (measured.label, value(centre, row.unit), value(peer.p99, row.unit))
                } else {
                    peerText = (measured.label, measured.optional ? "unavailable" : "error", "")
                }
            } else {
                peerText = ("—", "", "")
            }
            let met: String = switch row.met {
            case true?: "met"
            case false?: "**missed**"
            case nil: "—"
            }
            let oursCentre: String = row.ours.centre.map { value($0, row.unit) } ?? "error"
            let oursTail: String = ours.map { value($0.p99, row.unit) } ?? ""
            let ratio: String = row.ratio.map { format($0) + "×" } ?? "—"
            let target: String = row.target?.text ?? "—"
            var cells: [String] = ["`\(row.name)`", row.ours.label, oursCentre, oursTail]
            cells += [peerText.0, peerText.1, peerText.2, ratio, target, met]
            lines.append("| " + cells.map { $0.replacingAll("|", "\\|") }.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    private static func value(_ number: Double, _ unit: String) -> String { "\(format(number)) \(unit)" }
}
