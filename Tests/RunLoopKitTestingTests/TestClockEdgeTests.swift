// The test clock's edge cases: S-TMR-7. Loops here run on threads made for
// the test; no test sleeps for a timer.
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Test clock edge cases (S-TMR-7)", .blocksThreads)
struct TestClockEdgeTests {
    @Test("S-TMR-7: a timer already due when a test-clock loop would sleep fires without waiting for an advance; a passed deadline returns")
    func dueTimerDoesNotWaitForAnAdvance() throws {
        let (fired, result) = try SpawnedThread<(Bool, RunLoop.RunResult)>(named: "clk-due") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            let fired = Locked(false)
            // Its date is the clock's now: due before the loop first sleeps.
            loop.add(try Timer(fire: clock.now, interval: 0, repeats: false) { _ in fired.value = true }, forMode: .default)
            loop.add(keepAliveSource(), forMode: .default)
            // An observer that moves the clock past the run's deadline from
            // inside the run: the loop must notice before it sleeps.
            loop.add(RunLoopObserver(activities: .beforeWaiting, repeats: false) { _, _ in clock.advance(by: .seconds(10)) },
                     forMode: .default)
            let result = loop.run(mode: .default, seconds: 5)
            return (fired.value, result)
        }.join()
        #expect(fired)
        #expect(result == .timedOut)
    }

    @Test("S-TMR-6, S-TMR-7: a date a whole number of microseconds from the clock's now and the same advance land on the same instant")
    func datesAndAdvancesAgree() throws {
        for step in [0.25, 0.000_001, 1.5, 3_600.123_456] {
            let clock = TestClock()
            let due = clock.now + step
            #expect(clock.manual.instant(for: due) > clock.manual.nowInstant)
            clock.advance(by: .microseconds(Int64((step * 1e6).rounded())))
            #expect(clock.manual.instant(for: due) == clock.manual.nowInstant, "step \(step)")
        }
    }
}
