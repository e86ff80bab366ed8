/// How much one cost grows between two sizes, measured as one draw: the
/// small and the large case in alternation, moments apart, in one process,
/// and the quotient of their medians as the draw's only sample.
///
/// On this VM the host speeds a process up or slows it down for a second
/// or a few at a time, and not by the same factor at every size: a growth
/// read from two rows measured tens of seconds apart divides one regime by
/// another. Both sizes inside one draw share its regime, and the quotient
/// keeps what the size costs (Benchmarks/README.md, "How it measures").
final class GrowthInOneDraw: Contender {
    let label: String
    private let small: any Contender
    private let large: any Contender
    private let rounds: Int

    /// `rounds` times the small case then the large one, after one
    /// discarded measurement of each.
    init(label: String, small: any Contender, large: any Contender, rounds: Int) {
        self.label = label
        self.small = small
        self.large = large
        self.rounds = rounds
    }

    func setUp() throws {
        try small.setUp()
        try large.setUp()
    }

    func measure() throws -> [Double] {
        _ = try small.measure()
        _ = try large.measure()
        var smallSamples: [Double] = []
        var largeSamples: [Double] = []
        for _ in 0..<rounds {
            smallSamples += try small.measure()
            largeSamples += try large.measure()
        }
        guard let smallMedian = Summary(smallSamples, better: .lower)?.median, smallMedian > 0,
              let largeMedian = Summary(largeSamples, better: .lower)?.median else {
            throw BenchError("\(label): no samples to divide")
        }
        return [largeMedian / smallMedian]
    }

    func tearDown() {
        small.tearDown()
        large.tearDown()
    }
}
