// The test clock: S-TMR-7. Loops here run on threads made for the test; no
// test sleeps for a timer: time moves only when the test advances the clock.
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Test clock (S-TMR-7)", .blocksThreads)
struct TestClockTests {
    @Test("S-TMR-7: a timer on a test-clock loop fires only when the clock is advanced past its date, never early")
    func firesOnlyWhenAdvanced() throws {
        let fired = Locked<[Date]>([])
        let outcome = try SpawnedThread<[Int]>(named: "clk-basic") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            let due = clock.now + 60
            loop.add(try Timer(fire: due, interval: 0, repeats: false) { _ in fired.withLock { $0.append(clock.now) } }, forMode: .default)
            loop.add(keepAliveSource(), forMode: .default)
            var counts: [Int] = []
            loop.run(mode: .default, seconds: 0)          // a minute before its date
            counts.append(fired.value.count)
            clock.advance(by: .seconds(59))
            loop.run(mode: .default, seconds: 0)          // one second before
            counts.append(fired.value.count)
            clock.advance(to: due)
            loop.run(mode: .default, seconds: 0)          // at its date
            counts.append(fired.value.count)
            clock.advance(by: .seconds(3600))
            loop.run(mode: .default, seconds: 0)          // a one-shot timer fires once
            counts.append(fired.value.count)
            return counts
        }.join()
        #expect(outcome == [0, 0, 1, 1])
        #expect(fired.value.allSatisfy { $0 >= fired.value[0] })
    }

    @Test("S-TMR-7, S-TMR-2: an advance past several dates fires each timer once, in fire-date order, skipping missed repeats")
    func fireDateOrderAndNoBurst() throws {
        let log = EventLog()
        let (repeatingNext, start) = try SpawnedThread<(Date, Date)>(named: "clk-order") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            let start = clock.now
            // Added out of order on purpose.
            for (name, offset) in [("c", 30.0), ("a", 10.0), ("b", 20.0)] {
                loop.add(try Timer(fire: start + offset, interval: 0, repeats: false) { _ in log.add(name) }, forMode: .default)
            }
            let repeating = try Timer(fire: start + 5, interval: 5, repeats: true) { _ in log.add("r") }
            loop.add(repeating, forMode: .default)
            clock.advance(by: .seconds(42))
            loop.run(mode: .default, seconds: 0)
            return (repeating.fireDate, start)
        }.join()
        // The repeating timer was due first (at +5) and fires once, not eight times.
        #expect(log.all == ["r", "a", "b", "c"])
        // Its next date is the next multiple of its interval after the clock's now (+42): +45.
        #expect(repeatingNext == start + 45)
    }

    @Test("S-TMR-7: advancing the clock from another thread wakes a sleeping loop; its run deadline follows the clock")
    func advanceWakesAndDeadlineFollowsClock() throws {
        let clock = TestClock()
        let worker = LoopThread(name: "clk-wake", clock: clock)
        try worker.start()
        defer { worker.stop() }
        let loop = try #require(worker.runLoop)
        #expect(loop.testClock === clock)

        let fired = DispatchSemaphore(value: 0)
        try worker.performAndWait {
            _ = try RunLoop.current.scheduledTimer(withTimeInterval: 3600, repeats: false) { _ in fired.signal() }
        }
        // An hour on the test clock: the loop sleeps (no timerfd is armed for
        // a test clock) until the advance wakes it.
        #expect(fired.wait(timeout: .now() + .milliseconds(50)) == .timedOut)
        clock.advance(by: .seconds(3600))
        #expect(waitFor(fired), "the advance did not wake the loop to fire its timer")

        // A run with a 5-second deadline on the test clock returns when the
        // clock passes it, however little real time went by.
        let result = Handoff<RunLoop.RunResult>()
        try worker.perform {
            let inner = RunLoop.Mode("S-TMR-7.deadline")
            RunLoop.current.add(keepAliveSource(), forMode: inner)
            result.put(RunLoop.current.run(mode: inner, seconds: 5))
        }
        #expect(waitUntil(timeout: 10) { loop.currentMode == RunLoop.Mode("S-TMR-7.deadline") })
        clock.advance(by: .seconds(4))
        clock.advance(by: .seconds(1))
        #expect(try result.take() == .timedOut)
    }

    @Test("S-TMR-7, S-BLK-3: perform(afterDelay:) follows the loop's test clock")
    func performAfterDelayFollowsClock() throws {
        let ran = Counter()
        let counts = try SpawnedThread<[Int]>(named: "clk-delay") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            try loop.perform(afterDelay: 2) { ran.increment() }
            loop.add(keepAliveSource(), forMode: .default)
            var counts: [Int] = []
            clock.advance(by: .milliseconds(1999))
            loop.run(mode: .default, seconds: 0)
            counts.append(ran.value)
            clock.advance(by: .milliseconds(1))
            loop.run(mode: .default, seconds: 0)
            counts.append(ran.value)
            return counts
        }.join()
        #expect(counts == [0, 1])
    }

    @Test("S-TMR-7: a timer made with an explicit date keeps it on a test-clock loop; one clock drives two loops")
    func explicitDatesAndTwoLoops() throws {
        let clock = TestClock()
        let first = LoopThread(name: "clk-two-a", clock: clock), second = LoopThread(name: "clk-two-b", clock: clock)
        try first.start()
        try second.start()
        defer { first.stop(); second.stop() }
        let due = clock.now + 10
        let fires = DispatchSemaphore(value: 0)
        let dates = Locked<[Date]>([])
        for worker in [first, second] {
            try worker.performAndWait {
                let timer = try Timer(fire: due, interval: 0, repeats: false) { timer in
                    dates.withLock { $0.append(timer.fireDate) }
                    fires.signal()
                }
                RunLoop.current.add(timer, forMode: .default)
                #expect(timer.fireDate == due)
            }
        }
        clock.advance(by: .seconds(10))
        #expect(waitFor(fires) && waitFor(fires), "one advance should wake both loops")
        #expect(dates.value == [due, due])
    }

    @Test("S-TMR-7: giving a loop a test clock after something was scheduled on it traps, saying what to do")
    func clockAfterSchedulingTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = RunLoop.current
            loop.add(try Timer(timeInterval: 60, repeats: false) { _ in }, forMode: .default)
            loop.use(TestClock())
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("its clock can no longer change"), "\(stderr)")
        let onMain = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            RunLoop.main.use(TestClock())
        }
        let mainError = String(decoding: onMain?.standardErrorContent ?? [], as: UTF8.self)
        #expect(mainError.contains("RunLoop.main always uses the real clock"), "\(mainError)")
    }
}
