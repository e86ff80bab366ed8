/// Pooling the rows of several passes over the same scenarios.
///
/// A row measured in three passes, minutes apart, has its batches from three
/// stretches of the machine's time. On a VM whose host moves its virtual
/// CPUs, one stretch can be uniformly slower for one side than for the
/// other (a cross-CPU wake-up costing 60 µs instead of 40, a cache shared
/// or not): within it, more batches repeat the same bias; across passes,
/// pooled, it is outvoted. docs/performance.md ("Quick runs that repeat")
/// has the measurements that chose this over other statistics (best-of,
/// a lower quartile, per-round paired ratios), which did not help.
enum Passes {
    /// One row per name of the first pass, in its order, each side's
    /// samples those of every pass together, and its levels each pass's
    /// (Measurement.centre is their middle mean). A derived row whose side
    /// is a single computed value (a growth) thus gets one value per pass,
    /// each a level. A side that failed in any pass
    /// carries that failure, as a single pass would.
    ///
    /// `visits`: a scenario's rows from each of its visits, pass after
    /// pass; a scenario visited several times a pass (PassSchedule) has
    /// each visit pooled as a pass of its own.
    static func pool(_ visits: [[ScenarioResult]], visitsPerPass: Int = 1) -> [ScenarioResult] {
        guard var pooled = visits.first else { return [] }
        guard visits.count > 1 else {
            return pooled.map { row in
                var row = row
                row.notes += row.visitNotes
                row.visitNotes = []
                return row
            }
        }
        let passes = visits.count / visitsPerPass
        let source = visitsPerPass > 1
            ? "\(visits.count) visits (\(visitsPerPass) a pass, spread among the other scenarios, over \(passes) pass\(passes == 1 ? "" : "es"))"
            : "\(visits.count) passes over the selected scenarios (--passes)"
        for index in pooled.indices {
            let name = pooled[index].name
            let same = visits.map { visit in visit.first { $0.name == name } }
            pooled[index].ours = pool(same.map { $0?.ours })
            if pooled[index].peer != nil {
                pooled[index].peer = pool(same.map { $0?.peer })
            }
            pooled[index].notes.append("samples pooled from \(source); the notes above are the first visit's")
            for (number, visit) in same.enumerated() {
                for note in visit?.visitNotes ?? [] { pooled[index].notes.append("visit \(number + 1): \(note)") }
            }
            pooled[index].visitNotes = []
        }
        return pooled
    }

    private static func pool(_ sides: [Measurement?]) -> Measurement {
        var first = sides.compactMap { $0 }.first!
        if let missing = sides.firstIndex(where: { $0 == nil }) {
            first.samples = []
            first.error = "no such row in visit \(missing + 1)"
            return first
        }
        let present = sides.compactMap { $0 }
        if let failed = present.first(where: { $0.error != nil }) {
            first.samples = []
            first.error = failed.error
            return first
        }
        first.samples = present.flatMap(\.samples)
        // Each pass or visit is a draw of its own (another stretch of the
        // host's time), or brings the draws it made (fresh processes).
        first.levels = present.flatMap { pass in
            pass.levels.isEmpty ? (pass.summary.map { [$0.median] } ?? []) : pass.levels
        }
        return first
    }
}
