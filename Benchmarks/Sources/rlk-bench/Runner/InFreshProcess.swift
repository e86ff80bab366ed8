/// A contender measured in a fresh copy of rlk-bench each repetition
/// (`rlk-bench --child measure ...`, MeasureChild.swift), for the rows whose
/// figures depend on the process they happen to run in.
///
/// On this kind of VM some measurements settle, for a whole process, in
/// one of two regimes or at one level of a spread (a timer change's cost,
/// Foundation's main-queue drain), and within one process more batches
/// only repeat its draw. In a fresh process per repetition each run's
/// figure is taken over many draws (Benchmarks/README.md, "How it
/// measures"). The child does
/// one set-up, one warm-up repetition and one measured repetition, with
/// the same placement as in the parent; the parent's own warm-up round
/// (interleave's) costs one more process, and is discarded as ever.
final class InFreshProcess: Contender {
    let label: String
    /// Each repetition's process draws the level anew.
    var drawsEachRepetition: Bool { true }
    private let arguments: [String]
    private let timeout: Double

    /// `arguments` name the side as `MeasureChild.make` reads them (kind,
    /// placement, sizes): the child makes it from them, and its label is
    /// read from the same making here. Unknown arguments are a mistake in
    /// a scenario, and trap.
    init(_ arguments: [String], timeout: Double) {
        guard let side = MeasureChild.make(arguments) else {
            preconditionFailure("InFreshProcess: MeasureChild.make knows no contender \(arguments)")
        }
        label = side.label
        self.arguments = arguments
        self.timeout = timeout
    }

    func measure() throws -> [Double] {
        // The child pins its own threads as the parent's contender would:
        // -1 leaves the process free.
        let child = try ChildProcess(role: "measure", cpu: -1, arguments: arguments, captureOutput: true)
        let output = try child.readOutput(within: timeout)
        let ending = child.finish(within: 5)
        let samples = output.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { Double($0) }
        guard !samples.isEmpty else {
            throw BenchError("the measuring child (\(arguments.joined(separator: " "))) printed no samples; it \(ending)")
        }
        return samples
    }
}
