/// Which way is good for a metric: times and costs are lower-is-better,
/// throughputs higher-is-better. It decides which end of a distribution is
/// its tail (what "p99" reports) and how a ratio is read.
enum Better: String, Sendable, Codable {
    case lower
    case higher
}

/// Median and tail of a set of samples.
///
/// For a lower-is-better metric (a round trip, a lateness) "p99" is the 99th
/// percentile: 1 % of the samples are worse. For a higher-is-better metric
/// (messages per second, one sample per timed batch) it is the 1st
/// percentile, again the value that only 1 % of the samples fall below, so
/// that "p99" always means "the bad tail". Nearest-rank percentiles: every
/// reported value is one that was measured.
struct Summary: Sendable {
    let count: Int
    let median: Double
    let p99: Double
    let min: Double
    let max: Double
    let mean: Double

    init?(_ samples: [Double], better: Better) {
        guard !samples.isEmpty else { return nil }
        let sorted = samples.sorted()
        count = sorted.count
        median = Summary.percentile(sorted, 0.5)
        p99 = Summary.percentile(sorted, better == .lower ? 0.99 : 0.01)
        min = sorted[0]
        max = sorted[sorted.count - 1]
        mean = sorted.reduce(0, +) / Double(sorted.count)
    }

    /// The mean of `values` without their lowest and highest fifth (none of
    /// four or fewer): a centre for a few levels drawn independently. Where
    /// draws fall into two regimes, the median of ten jumps from one regime
    /// to the other as their shares cross a half; this moves by the shares.
    static func middleMean(_ values: [Double]) -> Double {
        precondition(!values.isEmpty, "middle mean of no values")
        let sorted = values.sorted()
        let trimmed = sorted.count / 5
        let middle = sorted[trimmed..<(sorted.count - trimmed)]
        return middle.reduce(0, +) / Double(middle.count)
    }

    /// Nearest-rank percentile of ascending `sorted` (p in 0...1).
    static func percentile(_ sorted: [Double], _ p: Double) -> Double {
        precondition(!sorted.isEmpty, "percentile of no samples")
        let rank = Int((p * Double(sorted.count)).rounded(.up))
        return sorted[Swift.min(Swift.max(rank - 1, 0), sorted.count - 1)]
    }
}
