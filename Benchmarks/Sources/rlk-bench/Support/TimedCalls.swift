import RunLoopKit

/// The calling side of the distributed-call rows and of their gRPC peer:
/// a task that prefers the `caller` LoopThread (every side calls from the
/// same kind of pinned thread, so that only the callee's path differs) and
/// makes one call after another, each awaited before the next, one sample
/// per call's round trip. `call` gets a new small value each time and must
/// answer it.
enum TimedCalls {
    /// Runs `warmup` + the recorder's samples calls, then returns the kept
    /// samples (µs); throws what a call threw, a wrong answer, or a timeout.
    static func measure(on caller: LoopThread, recorder: SampleRecorder, warmup: Int, samples: Int, timeout: Double,
                        _ call: @escaping @Sendable (Int) async throws -> Int) throws -> [Double] {
        recorder.reset(warmup: warmup, samples: samples)
        Task(executorPreference: caller) {
            var value = 0
            while true {
                value &+= 1
                let start = monotonicNanoseconds()
                let answer: Int
                do {
                    answer = try await call(value)
                } catch {
                    recorder.fail("call \(value) failed: \(error)")
                    return
                }
                let end = monotonicNanoseconds()
                guard answer == value else {
                    recorder.fail("call \(value) answered \(answer)")
                    return
                }
                if !recorder.record(end - start) { break }
            }
            recorder.done.open()
        }
        return try recorder.waitForSamples(seconds: timeout, what: "\(warmup + samples) calls")
    }
}
