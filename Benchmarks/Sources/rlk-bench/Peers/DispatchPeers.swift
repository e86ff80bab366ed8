import Dispatch

/// Dispatch's async round trip between two serial queues: queue A asyncs a
/// block on B, which asyncs one back on A. Dispatch runs queues on threads of
/// its own pool, which no handle reaches: with both sides on one CPU, every
/// thread is pinned there (`Placement.whilePoolPlaced`); otherwise the pool
/// runs free.
final class DispatchPingPong: Contender {
    let label = "Dispatch async (serial queues)"
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private let a = DispatchQueue(label: "bench.dispatch.a")
    private let b = DispatchQueue(label: "bench.dispatch.b")
    private let recorder: SampleRecorder

    init(iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.placement = placement
        recorder = SampleRecorder(capacity: iterations)
    }

    func measure() throws -> [Double] {
        recorder.reset(warmup: warmup, samples: iterations)
        let (recorder, a, b) = (self.recorder, self.a, self.b)
        return try placement.whilePoolPlaced {
            a.async { DispatchPingPong.ping(recorder, a, b) }
            return try recorder.waitForSamples(seconds: timeout, what: "Dispatch round trips")
        }
    }

    private static func ping(_ recorder: SampleRecorder, _ a: DispatchQueue, _ b: DispatchQueue) {
        recorder.mark = monotonicNanoseconds()
        b.async {
            a.async {
                if recorder.record(monotonicNanoseconds() - recorder.mark) {
                    ping(recorder, a, b)
                } else {
                    recorder.done.open()
                }
            }
        }
    }
}

/// Dispatch's async throughput: the calling thread queues `count` empty
/// blocks on one serial queue; the batch ends when the last has run.
final class DispatchFlood: Contender {
    let label = "Dispatch async (serial queue)"
    private let count: Int
    private let timeout: Double
    private let placement: Placement
    private let queue = DispatchQueue(label: "bench.dispatch.sink")

    init(count: Int, timeout: Double, placement: Placement) {
        self.count = count
        self.timeout = timeout
        self.placement = placement
    }

    func measure() throws -> [Double] {
        // The queue runs on Dispatch's pool: placed as a pool can be.
        try placement.whilePoolPlaced { try measurePinned() }
    }

    private func measurePinned() throws -> [Double] {
        let finished = SampleRecorder(capacity: 1)
        finished.reset(warmup: 0, samples: 1)
        let start = monotonicNanoseconds()
        for _ in 0..<(count - 1) { queue.async {} }
        queue.async {
            finished.mark = monotonicNanoseconds()
            finished.done.open()
        }
        try finished.done.wait(seconds: timeout, for: "\(count) Dispatch blocks")
        return [Double(count) / (Double(finished.mark - start) / 1e9)]
    }
}
