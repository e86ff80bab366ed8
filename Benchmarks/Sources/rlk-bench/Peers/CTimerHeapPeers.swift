import CBenchPeers

/// The floor for timers at scale: the same load as `RLKTimerChurn` on a
/// bare timerfd + epoll loop in C with a binary min-heap of timers
/// (timer_heap.c). Lateness in µs.
final class CTimerChurn: Contender {
    let label = "timerfd + epoll + binary heap (C)"
    private let load: TimerChurnLoad
    /// The CPU the loop runs on (-1: any): RLKTimerChurn's.
    private let cpu: Int32
    private(set) var lastChanges = 0

    init(_ load: TimerChurnLoad, cpu: Int32) {
        self.load = load
        self.cpu = cpu
    }

    func measure() throws -> [Double] {
        let (farCount, churnInterval, probes, window) = (load.farCount, load.churnInterval, load.probes, load.window)
        var lateness = [UInt64](repeating: 0, count: probes)
        var changes: Int32 = 0
        let fired = Placement.whilePinned(to: cpu) {
            bench_timer_churn(Int32(farCount), Int32(churnInterval * 1e6), Int32(probes), Int32(window * 1000), &lateness, &changes)
        }
        guard fired == Int32(probes) else { throw BenchError("the C timer loop fired \(fired) of \(probes) probes") }
        lastChanges = Int(changes)
        return lateness.map { Double($0) / 1000 }
    }
}

/// The cost of one change in a C binary heap of `count` timers (ns), in
/// batches as `RLKTimerChanges`: the floor's index heap (timer_heap.c), or
/// a heap of 96-byte timer objects under RLKTimerChanges's mix of changes
/// (timer_object_heap.c: what touching one timer object among many costs,
/// alone or with as much other work a change as RunLoopKit's).
final class CTimerHeapChanges: Contender {
    enum Kind {
        /// Three index arrays, a removal and an insertion a pair of changes.
        case indices
        /// A timer object per timer; a removal, an insertion and a move,
        /// after `workRounds` rounds of work on registers alone.
        case objects(workRounds: Int)
    }

    var label: String {
        switch kind {
        case .indices: "binary heap (C)"
        case .objects(let rounds): "binary heap of timer objects (C)" + (rounds > 0 ? ", \(rounds) rounds of other work" : "")
        }
    }
    private let kind: Kind
    private let count: Int
    private let changes: Int
    private let batches: Int
    /// The CPU the heap is changed on (-1: any): RLKTimerChanges's.
    private let cpu: Int32

    init(_ kind: Kind = .indices, count: Int, changes: Int, batches: Int, cpu: Int32) {
        self.kind = kind
        self.count = count
        self.changes = changes
        self.batches = batches
        self.cpu = cpu
    }

    func measure() throws -> [Double] {
        try Placement.whilePinned(to: cpu) { try batchCosts() }
    }

    private func batchCosts() throws -> [Double] {
        let perBatch = Int32(changes / batches)
        return try (0..<batches).map { _ in
            var nanoseconds: UInt64 = 0
            switch kind {
            case .indices:
                try checkC(bench_timer_heap_changes(Int32(count), perBatch, &nanoseconds), "timer heap changes")
                return Double(nanoseconds) / Double(perBatch)
            case .objects(let rounds):
                let made = bench_timer_object_heap_changes(Int32(count), perBatch, Int32(rounds), &nanoseconds)
                try checkC(min(made, 0), "timer object heap changes")
                return Double(nanoseconds) / Double(made)
            }
        }
    }
}

/// RLKTimerChurnPasses's load on the C loop: `fires` churn passes over
/// `farCount` far timers. The one sample is the time per fire (ns).
final class CTimerChurnPasses: Contender {
    let label = "C churn passes"
    private let farCount: Int
    private let fires: Int

    init(farCount: Int, fires: Int) {
        self.farCount = farCount
        self.fires = fires
    }

    func measure() throws -> [Double] {
        var changes: Int32 = 0
        let start = monotonicNanoseconds()
        let made = bench_timer_churn_passes(Int32(farCount), Int32(fires), &changes)
        guard made == Int32(fires) else { throw BenchError("the C churn loop made \(made) of \(fires) fires") }
        return [Double(monotonicNanoseconds() - start) / Double(fires)]
    }
}
