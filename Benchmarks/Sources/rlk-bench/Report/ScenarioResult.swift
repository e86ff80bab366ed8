/// One side of a comparison: what was measured, or why it could not be.
struct Measurement: Sendable {
    /// What this side is ("RunLoopKit Port", "raw libzmq PAIR", ...).
    var label: String
    /// The samples, in the row's unit (per-iteration times, or one value per
    /// timed batch). Kept for the charts.
    var samples: [Double]
    var better: Better
    /// The median of each independent draw of this side, in order: one per
    /// fresh process (InFreshProcess), and, pooled over passes, one per pass
    /// for a side measured in one process. Empty for a single draw.
    var levels: [Double] = []
    /// Why there are no samples, when there are none.
    var error: String?
    /// A peer that may be missing on some systems (Foundation's SocketPort):
    /// its failure is reported as "unavailable" and does not fail the run.
    var optional = false

    init(label: String, samples: [Double], better: Better, error: String? = nil, optional: Bool = false) {
        self.label = label
        self.samples = samples
        self.better = better
        self.error = error
        self.optional = optional
    }

    var summary: Summary? { Summary(samples, better: better) }

    /// The side's level, what ratios and growths compare: with several
    /// draws the middle mean of their levels (Summary.middleMean), else the
    /// samples' median. Benchmarks/README.md ("How it measures") says why.
    var centre: Double? {
        levels.count > 1 ? Summary.middleMean(levels) : summary?.median
    }
}

/// What a row must achieve, as docs/performance.md ("Targets") states it ("≤ 1.15×", "≥ 0.5×").
struct Target: Sendable {
    /// A target's standing, as docs/performance.md ("Targets") defines it:
    /// due now, guarded (no regression against the commit before a change;
    /// the target is shown so that the report says honestly whether it is
    /// met), or not due yet.
    enum Standing: String, Sendable {
        case due
        case guarded
        case notDue = "not due"
    }

    /// The bound alone ("≤ 1.15×").
    let bound: String
    let standing: Standing
    /// Whether a result meets it; nil when it cannot be judged (a side missing).
    let check: @Sendable (ScenarioResult) -> Bool?

    init(text: String, standing: Standing = .due, check: @escaping @Sendable (ScenarioResult) -> Bool?) {
        bound = text
        self.standing = standing
        self.check = check
    }

    /// How the target reads in the report: the bound, and its standing unless due.
    var text: String { standing == .due ? bound : "\(bound) (\(standing.rawValue))" }

    /// The same bound with another standing.
    func standing(_ standing: Standing) -> Target { Target(text: bound, standing: standing, check: check) }

    /// ours / peer at most `bound` (times: ours may be at most that much slower).
    static func ratioAtMost(_ bound: Double) -> Target {
        Target(text: "≤ \(format(bound))×") { result in result.ratio.map { $0 <= bound } }
    }

    /// ours / peer at least `bound` (throughputs: ours reaches that share of the peer).
    static func ratioAtLeast(_ bound: Double) -> Target {
        Target(text: "≥ \(format(bound))×") { result in result.ratio.map { $0 >= bound } }
    }

    /// `factor` times faster than the peer: ours / peer at most 1 / factor.
    static func fasterBy(_ factor: Double) -> Target {
        Target(text: "≥ \(format(factor))× faster (ratio ≤ \(format(1 / factor))×)") { result in
            result.ratio.map { $0 <= 1 / factor }
        }
    }

    /// ours' median and p99 at most `value` (absolute, in the row's unit).
    static func oursAtMost(_ value: Double, _ text: String) -> Target {
        Target(text: text) { result in
            result.ours.summary.map { $0.median <= value && $0.p99 <= value }
        }
    }
}

/// One row of the report: ours against one peer in one scenario.
struct ScenarioResult: Sendable {
    /// Stable name, for --filter, the JSON and the docs ("roundtrip-inproc").
    let name: String
    /// What is measured, in words.
    let title: String
    /// The unit of every number in the row ("µs", "msg/s", ...).
    let unit: String
    let better: Better
    var ours: Measurement
    /// nil for a row without a peer (the idle loop is judged on its own).
    var peer: Measurement?
    var target: Target?
    /// What a reader needs to interpret the row (sizes, what was shrunk in --quick, ...).
    var notes: [String] = []
    /// Notes that say what one pass or visit saw that others may not (an
    /// fd that came and went): pooling keeps every visit's, numbered, where
    /// `notes` keeps the first visit's only.
    var visitNotes: [String] = []
    /// Rows with the same group share a panel of the latency chart.
    var chartGroup: String? = nil
    /// The x value of a curve's point (the port count of a scaling row).
    var parameter: Double? = nil

    /// ours / peer, their centres (Measurement.centre). For times < 1 is
    /// better, for throughputs > 1.
    var ratio: Double? {
        guard let ours = ours.centre, let peer = peer?.centre, peer != 0 else { return nil }
        return ours / peer
    }

    /// Whether the target is met; nil without a target or without the data to judge.
    var met: Bool? { target?.check(self) }

    /// True when a side that must work failed: the run then exits non-zero.
    var failed: Bool {
        (ours.error != nil && !ours.optional) || (peer.map { $0.error != nil && !$0.optional } ?? false)
    }
}

/// A number with a sensible count of digits for a report.
func format(_ value: Double) -> String {
    guard value.isFinite else { return value.isNaN ? "n/a" : (value > 0 ? "∞" : "-∞") }
    let magnitude = abs(value)
    if magnitude == 0 { return "0" }
    if magnitude >= 1_000_000 { return grouped(value.rounded()) }
    if magnitude >= 1000 { return grouped(value.rounded()) }
    let digits = magnitude >= 100 ? 1 : (magnitude >= 10 ? 1 : (magnitude >= 1 ? 2 : 3))
    var text = fixed(value, digits: digits)
    // 1.10 -> 1.1, 2.00 -> 2
    if text.contains(".") {
        while text.hasSuffix("0") { text.removeLast() }
        if text.hasSuffix(".") { text.removeLast() }
    }
    return text
}

/// `value` with `digits` decimals (Foundation's String(format:) is not imported here).
private func fixed(_ value: Double, digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let scaled = (abs(value) * scale).rounded()
    let whole = Int(scaled / scale)
    let fraction = Int(scaled) - whole * Int(scale)
    var text = "\(value < 0 ? "-" : "")\(whole)"
    if digits > 0 {
        let fractionText = "\(fraction)"
        text += "." + String(repeating: "0", count: digits - fractionText.count) + fractionText
    }
    return text
}

/// 1234567 -> "1,234,567".
private func grouped(_ value: Double) -> String {
    let digits = Array(String(Int(abs(value))))
    var text = ""
    for (index, digit) in digits.enumerated() {
        if index > 0 && (digits.count - index) % 3 == 0 { text += "," }
        text.append(digit)
    }
    return (value < 0 ? "-" : "") + text
}
