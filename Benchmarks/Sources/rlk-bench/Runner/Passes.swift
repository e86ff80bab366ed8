/// Pooling the rows of several passes over the same scenarios.
///
/// A row measured in several passes, minutes apart, has its batches from as
/// many stretches of the machine's time. On a VM whose host moves its
/// virtual CPUs, one stretch can be uniformly slower for one side than for
/// the other: within it, more batches repeat the same bias; across passes,
/// pooled, it is outvoted (docs/performance.md, "Why draws, not batches";
/// the statistics tried instead: Benchmarks/README.md, "How it measures").
enum Passes {
    /// One row per name of the first pass, in its order, each side's
    /// samples those of every pass together, and its levels each pass's
    /// (Measurement.centre is their middle mean). A derived row whose side
    /// is a single computed value (a growth) thus gets one value per pass,
    /// each a level. A side that failed in any pass
    /// carries that failure, as a single pass would, unless it is optional
    /// (then the passes where it failed are left out, and a note says so).
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
            let (ours, oursNote) = pool(same.map { $0?.ours })
            pooled[index].ours = ours
            var sideNotes = [oursNote]
            if pooled[index].peer != nil {
                let (peer, peerNote) = pool(same.map { $0?.peer })
                pooled[index].peer = peer
                sideNotes.append(peerNote)
            }
            pooled[index].notes.append("samples pooled from \(source); the notes above are the first visit's")
            pooled[index].notes += sideNotes.compactMap { $0 }
            for (number, visit) in same.enumerated() {
                for note in visit?.visitNotes ?? [] { pooled[index].notes.append("visit \(number + 1): \(note)") }
            }
            pooled[index].visitNotes = []
        }
        return pooled
    }

    /// A side pooled over the visits, and a note when visits were left out:
    /// an optional side (a peer that may fail, as Foundation's SocketPort
    /// sometimes does on Linux) that failed in some visits and not all is
    /// pooled from the others, the note naming the failed visits and the
    /// first error; any other failure fails the side.
    private static func pool(_ sides: [Measurement?]) -> (Measurement, String?) {
        var first = sides.compactMap { $0 }.first!
        if let missing = sides.firstIndex(where: { $0 == nil }) {
            first.samples = []
            first.error = "no such row in visit \(missing + 1)"
            return (first, nil)
        }
        var present = sides.compactMap { $0 }
        var note: String?
        let failedVisits = present.indices.filter { present[$0].error != nil }
        if first.optional && !failedVisits.isEmpty && failedVisits.count < present.count {
            let error = present[failedVisits[0]].error ?? ""
            note = "\(first.label): left out of visit\(failedVisits.count == 1 ? "" : "s") \(failedVisits.map { String($0 + 1) }.joined(separator: ", ")) of \(present.count), where it failed (\(error))"
            present = present.filter { $0.error == nil }
            first = present[0]
        }
        if let failed = present.first(where: { $0.error != nil }) {
            first.samples = []
            first.error = failed.error
            return (first, nil)
        }
        first.samples = present.flatMap(\.samples)
        // Each pass or visit is a draw of its own (another stretch of the
        // host's time), or brings the draws it made (fresh processes).
        first.levels = present.flatMap { pass in
            pass.levels.isEmpty ? (pass.summary.map { [$0.median] } ?? []) : pass.levels
        }
        return (first, note)
    }
}
