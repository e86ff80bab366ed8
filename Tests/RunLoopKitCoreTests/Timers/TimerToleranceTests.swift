// Timer tolerance: S-TMR-3. On the real clock, because real time is what
// these test:
// - toleranceCoalesces: tolerance decides when the loop arms its timerfd to
//   wake; a test-clock loop never sleeps for a timer (it fires what is due
//   when an advance wakes it), so coalescing cannot be seen there. Its logic
//   alone is heapMatchesLookingAtEveryTimer's (TimerHeapTests);
// - zeroToleranceWakesAtDate: wake-up latency.
// toleranceClamps runs no loop and waits for nothing.
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Timer tolerance (S-TMR-3)", .blocksThreads)
struct TimerToleranceTests {
    private static let ms = nanosecondsPerMillisecond

    @Test("S-TMR-3: tolerance lets the loop fire two timers in one wake-up; never before their dates")
    func toleranceCoalesces() throws {
        final class PassRecorder: RunLoopMonitor, @unchecked Sendable {
            let firedPerPass = Locked<[Int]>([])
            func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) {
                if pass.firedTimers > 0 { firedPerPass.withLock { $0.append(pass.firedTimers) } }
            }
        }
        let recorder = PassRecorder()
        let fires = Locked<[String: UInt64]>([:])
        let (result, earlyDate, lateDate) = try SpawnedThread<(RunLoop.RunResult, UInt64, UInt64)>(named: "tmr-tol") {
            let loop = RunLoop.current
            loop.monitor = recorder
            let early = try Timer(timeInterval: 0.1, repeats: false) { _ in
                let now = monotonicNow()
                fires.withLock { $0["early"] = now }
            }
            early.tolerance = 0.4
            let late = try Timer(timeInterval: 0.25, repeats: false) { _ in
                let now = monotonicNow()
                fires.withLock { $0["late"] = now }
            }
            let dates = (early.nextFireInstant, late.nextFireInstant)
            loop.add(early, forMode: .default)
            loop.add(late, forMode: .default)
            return (loop.run(mode: .default, seconds: 10), dates.0, dates.1)
        }.join()

        #expect(result == .finished)
        let earlyFired = try #require(fires.value["early"]), lateFired = try #require(fires.value["late"])
        #expect(earlyFired >= earlyDate && lateFired >= lateDate)
        // The early timer may wait, within its 400 ms tolerance, for the late one's wake-up.
        #expect(recorder.firedPerPass.value == [2], "tolerance should let both timers fire in one pass")
        // Within its tolerance, and some slack for the thread to be
        // scheduled: 200 ms, or 5 s under a sanitizer beside the whole suite
        // (AddressSanitizer's run once held this thread back 2.1 s).
        let slack: UInt64 = ProcessProbe.sanitizerName == nil ? 200 * Self.ms : 5_000 * Self.ms
        #expect(earlyFired <= earlyDate + 400 * Self.ms + slack)
    }

    @Test("S-TMR-3: a zero-tolerance timer wakes the loop at its date, not at the run's deadline")
    func zeroToleranceWakesAtDate() throws {
        let (fired, date, result) = try SpawnedThread<(UInt64, UInt64, RunLoop.RunResult)>(named: "tmr-zero") {
            let loop = RunLoop.current
            let fired = Locked<UInt64>(0)
            let timer = try Timer(timeInterval: 0.03, repeats: false) { _ in fired.value = monotonicNow() }
            #expect(timer.tolerance == 0)
            let date = timer.nextFireInstant
            loop.add(timer, forMode: .default)
            let result = loop.run(mode: .default, seconds: 30)
            return (fired.value, date, result)
        }.join()
        #expect(result == .finished)
        try #require(fired >= date, "the timer fired early, or not at all")
        // Wake-up latency only, not the run's 30 s deadline; the bound is
        // loose because tests run in parallel: 500 ms, or 5 s under a
        // sanitizer beside the whole suite on two cores (AddressSanitizer's
        // run once held a loop thread back 2.1 s).
        let bound: UInt64 = ProcessProbe.sanitizerName == nil ? 500 * Self.ms : 5_000 * Self.ms
        #expect(fired - date < bound, "zero-tolerance timer was \((fired - date) / Self.ms) ms late")
    }

    @Test("S-TMR-3: tolerance is clamped to zero for negative or NaN values, as Foundation does, and to 2⁶⁰ - 1 ns (about 36 years) above")
    func toleranceClamps() throws {
        let timer = try Timer(timeInterval: 1, repeats: false) { _ in }
        timer.tolerance = 0.25
        #expect(timer.tolerance == 0.25)
        timer.tolerance = -1
        #expect(timer.tolerance == 0)
        timer.tolerance = .nan
        #expect(timer.tolerance == 0)
        // Up to 2⁶⁰ - 1 ns, about 36 years: the bits above are the timer's own.
        timer.tolerance = 1e12
        #expect(timer.tolerance == MonotonicClock.seconds((1 << 60) - 1))
        #expect(timer.isValid, "a huge tolerance left the timer valid")
        timer.invalidate()
        #expect(!timer.isValid && timer.tolerance == MonotonicClock.seconds((1 << 60) - 1))
    }
}
