/// The human-readable report: a block per row as scenarios finish, and a
/// summary table at the end.
enum TableReport {
    static func header(_ machine: MachineInfo, quick: Bool, placement: Placement, passes: Int) -> String {
        """
        rlk-bench — RunLoopKit against its peers (\(quick ? "--quick: smaller counts, for CI" : "full run")\(passes > 1 ? "; \(passes) passes, each row's samples pooled" : ""))
        machine: \(machine.cpus) CPUs, \(machine.cpuModel); \(machine.kernel); Swift \(machine.swift); libzmq \(machine.libzmq)
        placement (--placement \(placement.mode.rawValue)): \(placement)
        ratio = ours / peer (centres: a side's median, or with several draws, fresh processes or passes, the middle mean of their medians). Times: lower is better, so a target reads "≤". Rates: higher is better, "≥".
        p99 is the bad tail: the 99th percentile of a time, the 1st percentile of a rate.

        """
    }

    /// One row, as soon as its scenario finishes.
    static func block(_ row: ScenarioResult) -> String {
        var lines = ["\(row.name) — \(row.title)"]
        let labelWidth = max(row.ours.label.count, row.peer?.label.count ?? 0) + 2
        lines.append("  " + pad("", 6) + pad("", labelWidth) + padLeft("centre", 14) + padLeft("median", 14) + padLeft("p99", 14)
                     + padLeft("samples", 9))
        lines.append(side("ours", row.ours, row.unit, labelWidth))
        if let peer = row.peer { lines.append(side("peer", peer, row.unit, labelWidth)) }
        var verdict = "  "
        if let ratio = row.ratio { verdict += "ratio \(format(ratio))×   " }
        if let target = row.target {
            verdict += "target \(target.text)   → " + metText(row.met)
        } else {
            verdict += "no target (informational)"
        }
        lines.append(verdict)
        for note in row.notes { lines.append("  · " + note) }
        return lines.joined(separator: "\n") + "\n"
    }

    static func summary(_ rows: [ScenarioResult], elapsed: Double) -> String {
        let columns = [("scenario", 32), ("unit", 11), ("ours centre", 14), ("ours p99", 13), ("peer centre", 14),
                       ("peer p99", 13), ("ratio", 8), ("target", 30), ("met", 7)]
        var lines = ["summary (\(format(elapsed)) s)"]
        lines.append(columns.map { pad($0.0, $0.1) }.joined())
        for row in rows {
            let ours = row.ours.summary, peer = row.peer?.summary
            let cells = [
                row.name, row.unit,
                row.ours.centre.map { format($0) } ?? "error",
                ours.map { format($0.p99) } ?? "",
                row.peer == nil ? "—" : (row.peer?.centre.map { format($0) } ?? (row.peer!.optional ? "unavailable" : "error")),
                peer.map { format($0.p99) } ?? "",
                row.ratio.map { format($0) + "×" } ?? "—",
                row.target?.text ?? "—",
                row.target == nil ? "—" : metText(row.met),
            ]
            lines.append(zip(cells, columns).map { pad($0, $1.1) }.joined())
        }
        lines.append("\(metCount(rows)); rlk-bench exits 0 whether they are met or not")
        lines.append("standing, as docs/performance.md (\"Targets\") gives it: due now; guarded (no regression against the commit before a change); not due yet")
        return lines.joined(separator: "\n") + "\n"
    }

    /// "12 of 19 judged targets met (due: …; guarded: …; not due: …)".
    static func metCount(_ rows: [ScenarioResult]) -> String {
        let judged = rows.filter { $0.met != nil }
        let byStanding = [Target.Standing.due, .guarded, .notDue].compactMap { standing -> String? in
            let these = judged.filter { $0.target?.standing == standing }
            return these.isEmpty ? nil : "\(standing.rawValue): \(these.filter { $0.met == true }.count) of \(these.count)"
        }
        let perStanding = byStanding.isEmpty ? "" : " (\(byStanding.joined(separator: "; ")))"
        return "\(judged.filter { $0.met == true }.count) of \(judged.count) judged targets met\(perStanding)"
    }

    private static func side(_ role: String, _ measurement: Measurement, _ unit: String, _ width: Int) -> String {
        let start = "  " + pad(role, 6) + pad(measurement.label, width)
        guard let summary = measurement.summary else {
            let status = measurement.optional ? "unavailable" : "ERROR"
            return start + "\(status): \(measurement.error ?? "no samples")"
        }
        let centre = measurement.centre.map { format($0) + " " + unit } ?? ""
        return start + padLeft(centre, 14) + padLeft(format(summary.median) + " " + unit, 14)
            + padLeft(format(summary.p99) + " " + unit, 14) + padLeft("\(summary.count)", 9)
    }

    private static func metText(_ met: Bool?) -> String {
        switch met {
        case true?: return "met"
        case false?: return "MISSED"
        case nil: return "n/a"
        }
    }

    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    static func padLeft(_ text: String, _ width: Int) -> String {
        text.count >= width ? " " + text : String(repeating: " ", count: width - text.count) + text
    }
}
