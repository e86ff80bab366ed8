/// One side of a comparison, measured repeatedly: RunLoopKit or a peer.
///
/// `setUp` builds what lives across repetitions (threads, ports, sockets,
/// child processes), so that each `measure` times only the work itself;
/// `tearDown` must release all of it, even after a failed `measure`.
protocol Contender: AnyObject {
    /// What this side is, as the report names it.
    var label: String { get }
    /// A peer that some systems lack: its failure reads "unavailable" and
    /// does not fail the run.
    var optional: Bool { get }
    func setUp() throws
    /// One repetition: its samples, in the row's unit.
    func measure() throws -> [Double]
    func tearDown()
    /// Whether each repetition is an independent draw of the side's level
    /// (a fresh process each time, InFreshProcess): each repetition's
    /// median is then one of the measurement's levels.
    var drawsEachRepetition: Bool { get }
}

extension Contender {
    var optional: Bool { false }
    var drawsEachRepetition: Bool { false }
    func setUp() throws {}
    func tearDown() {}
}

/// Runs contenders in alternation (ours, peer, ours, peer, ...) so that a
/// drift of the machine (another process, frequency, cache state) touches
/// every side alike, after `warmups` discarded rounds.
///
/// A contender that fails is dropped from later rounds; its measurement
/// carries the error. Every contender is torn down at the end.
func interleave(_ contenders: [any Contender], repetitions: Int, warmups: Int = 1, better: Better) -> [Measurement] {
    var samples = Array(repeating: [Double](), count: contenders.count)
    var levels = Array(repeating: [Double](), count: contenders.count)
    var errors = [String?](repeating: nil, count: contenders.count)
    for (index, contender) in contenders.enumerated() {
        do { try contender.setUp() } catch { errors[index] = "set-up failed: \(error)" }
    }
    for round in 0..<(warmups + repetitions) {
        for (index, contender) in contenders.enumerated() where errors[index] == nil {
            do {
                let values = try BatchTrace.traced(contender.label, round: round) { try contender.measure() }
                if round >= warmups {
                    samples[index] += values
                    if contender.drawsEachRepetition, let level = Summary(values, better: better)?.median {
                        levels[index].append(level)
                    }
                }
            } catch {
                errors[index] = "\(error)"
            }
        }
    }
    for contender in contenders { contender.tearDown() }
    return contenders.enumerated().map { index, contender in
        var measurement = Measurement(label: contender.label, samples: errors[index] == nil ? samples[index] : [],
                                      better: better, error: errors[index], optional: contender.optional)
        if errors[index] == nil { measurement.levels = levels[index] }
        return measurement
    }
}
