import RunLoopKit

/// RunLoopKit's perform-on-thread round trip: loop A performs a block on
/// loop B, which performs one back on A, which records the round trip and
/// starts the next (performSelector:onThread: both ways). Compared with
/// SwiftNIO's EventLoop.execute and Dispatch's async doing the same.
final class PerformPingPong: Contender {
    let label = "RunLoopKit RunLoop.perform"
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private var threads: [LoopThread] = []
    private let recorder: SampleRecorder

    init(iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.placement = placement
        recorder = SampleRecorder(capacity: iterations)
    }

    func setUp() throws {
        threads = [LoopThread(name: "bench-perf-a"), LoopThread(name: "bench-perf-b")]
        for (thread, cpu) in zip(threads, [placement.first, placement.second]) {
            try thread.start()
            if let tid = thread.threadID { Placement.pin(tid, to: cpu) }
        }
    }

    func measure() throws -> [Double] {
        guard let a = threads.first?.runLoop, let b = threads.last?.runLoop else { throw BenchError("not set up") }
        recorder.reset(warmup: warmup, samples: iterations)
        let recorder = self.recorder
        a.perform { PerformPingPong.ping(recorder, a, b) }
        return try recorder.waitForSamples(seconds: timeout, what: "perform round trips")
    }

    /// On A: stamp, hop to B, hop back to A, record, again.
    private static func ping(_ recorder: SampleRecorder, _ a: RunLoop, _ b: RunLoop) {
        recorder.mark = monotonicNanoseconds()
        b.perform {
            a.perform {
                if recorder.record(monotonicNanoseconds() - recorder.mark) {
                    ping(recorder, a, b)
                } else {
                    recorder.done.open()
                }
            }
        }
    }

    func tearDown() {
        for thread in threads { thread.stop() }
        threads = []
    }
}

/// RunLoopKit's perform throughput: the calling thread queues `count` blocks
/// on one LoopThread's loop as fast as `perform` takes them; the batch ends
/// when the last block has run (blocks from one thread run in order, S-BLK-4).
final class PerformFlood: Contender {
    let label = "RunLoopKit RunLoop.perform"
    private let count: Int
    private let timeout: Double
    private let placement: Placement
    private var thread: LoopThread?

    init(count: Int, timeout: Double, placement: Placement) {
        self.count = count
        self.timeout = timeout
        self.placement = placement
    }

    func setUp() throws {
        let thread = try Placement.startedLoopThread("bench-perf-sink", on: placement.second)
        self.thread = thread
    }

    func measure() throws -> [Double] {
        try Placement.whilePinned(to: placement.first) { try measurePinned() }
    }

    private func measurePinned() throws -> [Double] {
        guard let loop = thread?.runLoop else { throw BenchError("not set up") }
        let finished = SampleRecorder(capacity: 1)
        finished.reset(warmup: 0, samples: 1)
        let start = monotonicNanoseconds()
        for _ in 0..<(count - 1) { loop.perform {} }
        loop.perform {
            finished.mark = monotonicNanoseconds()
            finished.done.open()
        }
        try finished.done.wait(seconds: timeout, for: "\(count) performed blocks")
        return [Double(count) / (Double(finished.mark - start) / 1e9)]
    }

    func tearDown() {
        thread?.stop()
        thread = nil
    }
}
