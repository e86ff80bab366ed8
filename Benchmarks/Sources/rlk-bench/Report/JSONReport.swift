import RunLoopKit

/// `--json`: the same results as the table, as one JSON document on stdout:
/// the machine and the run, then one object per row with name, unit, ours,
/// peer, ratio, target and met (null where there is nothing to say); each
/// side with its median, p99, sample count, centre and levels.
enum JSONReport {
    struct Document: Codable {
        let tool: String
        let mode: String
        let placement: String
        /// How many passes each row's samples were pooled from (--passes).
        let passes: Int
        let seconds: Double
        let machine: MachineInfo
        let scenarios: [Row]
    }

    struct Side: Codable {
        let label: String
        let median: Double?
        let p99: Double?
        let samples: Int
        /// What the ratio compares (Measurement.centre).
        let centre: Double?
        /// Each independent draw's median (Measurement.levels), in order.
        let levels: [Double]
        let error: String?

        // Written by hand so that a missing value is an explicit null.
        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(label, forKey: .label)
            try container.encode(median, forKey: .median)
            try container.encode(p99, forKey: .p99)
            try container.encode(samples, forKey: .samples)
            try container.encode(centre, forKey: .centre)
            try container.encode(levels, forKey: .levels)
            try container.encode(error, forKey: .error)
        }
    }

    struct Row: Codable {
        let name: String
        let title: String
        let unit: String
        let better: Better
        let ours: Side
        let peer: Side?
        let ratio: Double?
        let target: String?
        /// "due", "guarded" or "not due" (Target.Standing); null without a target.
        let targetStanding: String?
        let met: Bool?
        let notes: [String]

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(name, forKey: .name)
            try container.encode(title, forKey: .title)
            try container.encode(unit, forKey: .unit)
            try container.encode(better, forKey: .better)
            try container.encode(ours, forKey: .ours)
            try container.encode(peer, forKey: .peer)
            try container.encode(ratio, forKey: .ratio)
            try container.encode(target, forKey: .target)
            try container.encode(targetStanding, forKey: .targetStanding)
            try container.encode(met, forKey: .met)
            try container.encode(notes, forKey: .notes)
        }
    }

    static func render(_ rows: [ScenarioResult], machine: MachineInfo, quick: Bool, placement: Placement,
                       passes: Int, seconds: Double) throws -> String {
        func side(_ measurement: Measurement) -> Side {
            let summary = measurement.summary
            let error = summary == nil ? (measurement.optional ? "unavailable: " : "") + (measurement.error ?? "no samples") : nil
            func finite(_ value: Double?) -> Double? { value.flatMap { $0.isFinite ? $0 : nil } }
            return Side(label: measurement.label, median: finite(summary?.median), p99: finite(summary?.p99),
                        samples: summary?.count ?? 0, centre: finite(measurement.centre),
                        levels: measurement.levels.filter(\.isFinite), error: error)
        }
        let document = Document(
            tool: "rlk-bench", mode: quick ? "quick" : "full", placement: placement.mode.rawValue, passes: passes, seconds: seconds,
            machine: machine,
            scenarios: rows.map { row in
                Row(name: row.name, title: row.title, unit: row.unit, better: row.better, ours: side(row.ours),
                    peer: row.peer.map(side), ratio: row.ratio.flatMap { $0.isFinite ? $0 : nil },
                    target: row.target?.text, targetStanding: row.target?.standing.rawValue, met: row.met, notes: row.notes)
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(document), as: UTF8.self) + "\n"
    }
}
