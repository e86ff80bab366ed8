import Glibc

/// `RLK_BENCH_TRACE=1`: every repetition `interleave` measures is printed on
/// stderr with the process's context switches during it (all threads,
/// getrusage), so that a side whose levels split in two can be read batch
/// by batch: is a slow batch one whose threads switched more often per
/// message? A diagnostic (docs/performance.md, "Many ports"); off, it
/// costs one check a repetition.
enum BatchTrace {
    static let isOn = getenv("RLK_BENCH_TRACE").map { String(cString: $0) != "0" } ?? false

    /// The process's voluntary and involuntary context switches so far.
    private static func switches() -> (voluntary: Int, involuntary: Int) {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return (usage.ru_nvcsw, usage.ru_nivcsw)
    }

    /// Runs `measure`; when tracing, prints its values and the switches it took.
    static func traced(_ label: String, round: Int, _ measure: () throws -> [Double]) rethrows -> [Double] {
        guard isOn else { return try measure() }
        let before = switches()
        let values = try measure()
        let after = switches()
        let shown = values.prefix(8).map { format($0) }.joined(separator: " ")
        FileHandleOut.error("trace round \(round) \(label): \(shown)\(values.count > 8 ? " …" : ""); context switches +\(after.voluntary - before.voluntary) voluntary, +\(after.involuntary - before.involuntary) involuntary")
        return values
    }
}
