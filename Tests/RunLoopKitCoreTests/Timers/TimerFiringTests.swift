// Timers firing: S-TMR-1 (what a timer is) and S-TMR-2 (never early, no
// bursts, only while the loop runs one of its modes). Every loop here runs
// on a thread made for the test.
//
// Where timing itself is not the subject, the loop runs on a TestClock
// (S-TMR-7): time moves only when the test advances it, directly or with
// `advanceWhenIdle` (an observer that moves the clock a step each time the
// loop is about to sleep), and the assertions are the same, in test-clock
// instants: a timer in two modes (S-TMR-1), skipping missed fires after a
// busy loop and firing only in its modes (S-TMR-2). Fire-date order on the
// test clock is proven in TestClockTests (fireDateOrderAndNoBurst).
//
// neverEarly stays on the real clock, because real time is what it tests:
// never early against CLOCK_MONOTONIC, the clock the timerfd and the wake-up
// run on. So do TimerToleranceTests and TimerRescheduleTests (the timerfd),
// and, in another folder, ModeTests' addCommonModeLaterBringsCommonItems:
// its timer is due at once, so no time needs to pass, and its only deadline
// bounds the wait for a ZeroMQ message, input from outside the loop, which a
// test-clock deadline would no longer bound.
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Timers firing (S-TMR-1, S-TMR-2)", .blocksThreads)
struct TimerFiringTests {
    private static let ms = nanosecondsPerMillisecond

    @Test("S-TMR-1, S-TMR-2: one-shot and repeating timers are never early")
    func neverEarly() throws {
        // (scheduled instant, fire instant) of every fire.
        let fires = Locked<[(scheduled: UInt64, fired: UInt64)]>([])
        let repeatingFires = Locked<[UInt64]>([])
        let interval = 15 * Self.ms
        let (result, repeatingStart) = try SpawnedThread<(RunLoop.RunResult, UInt64)>(named: "tmr-early") {
            let loop = RunLoop.current
            for step in 1...10 {
                let scheduled = Locked<UInt64>(0)
                let timer = try Timer(timeInterval: Double(step) * 0.005, repeats: false) { _ in
                    let now = monotonicNow()
                    fires.withLock { $0.append((scheduled.value, now)) }
                }
                #expect(timer.timeInterval == 0 && !timer.repeats)
                scheduled.value = timer.nextFireInstant
                loop.add(timer, forMode: .default)
            }
            let repeating = try Timer(timeInterval: 0.015, repeats: true) { timer in
                let count = repeatingFires.withLock { $0.append(monotonicNow()); return $0.count }
                if count == 5 { timer.invalidate() }
            }
            #expect(repeating.repeats && repeating.timeInterval == 0.015)
            let start = repeating.nextFireInstant
            loop.add(repeating, forMode: .default)
            return (loop.run(mode: .default, seconds: 10), start)
        }.join()

        #expect(result == .finished)
        let oneShots = fires.value
        #expect(oneShots.count == 10)
        for fire in oneShots {
            #expect(fire.fired >= fire.scheduled, "one-shot timer fired \(Int64(fire.scheduled) - Int64(fire.fired)) ns early")
        }
        // Fire n of a repeating timer can never come before its n-th scheduled date.
        let repeated = repeatingFires.value
        #expect(repeated.count == 5)
        for (index, fired) in repeated.enumerated() {
            let scheduled = repeatingStart + UInt64(index) * interval
            #expect(fired >= scheduled, "repeating fire \(index) was \(Int64(scheduled) - Int64(fired)) ns early")
        }
    }

    @Test("S-TMR-1, S-TMR-7: a timer in two modes of one loop fires in either, once")
    func timerInTwoModes() throws {
        let fired = Locked(0)
        let (before, after, result) = try TestClockThread<([Bool], [Bool], RunLoop.RunResult)>.run(named: "tmr-modes") { clock, loop in
            let other = RunLoop.Mode("S-TMR-1.other")
            let timer = try loop.scheduledTimer(withTimeInterval: 0.01, repeats: false) { _ in fired.withLock { $0 += 1 } }
            loop.add(timer, forMode: other)
            clock.advanceWhenIdle(loop, by: .milliseconds(1), mode: other)
            let before = [loop.contains(timer, inMode: .default), loop.contains(timer, inMode: other)]
            let result = loop.run(mode: other, seconds: 10)
            let after = [loop.contains(timer, inMode: .default), loop.contains(timer, inMode: other)]
            return (before, after, result)
        }
        #expect(before == [true, true])
        #expect(result == .finished)
        #expect(fired.value == 1)
        // A one-shot timer leaves every mode after firing (S-TMR-4).
        #expect(after == [false, false])
    }

    @Test("S-TMR-2, S-TMR-7: a repeating timer made late by a busy loop fires once, then at the next multiple of its interval")
    func lateTimerSkipsMissedFires() throws {
        // Instants and fire times are on the loop's test clock.
        let interval = 100 * Self.ms
        let fires = Locked<[UInt64]>([])
        let nextDates = Locked<[UInt64]>([])
        let (result, firstDate) = try TestClockThread<(RunLoop.RunResult, UInt64)>.run(named: "tmr-late") { clock, loop in
            let timer = try loop.scheduledTimer(withTimeInterval: 0.1, repeats: true) { timer in
                let now = clock.manual.nowInstant
                // The next date is set once the callout returns (S-TMR-6):
                // read it from a block, which runs after the timers of the pass.
                loop.perform { nextDates.append(timer.nextFireInstant) }
                if fires.withLock({ $0.append(now); return $0.count }) == 3 { timer.invalidate() }
            }
            let firstDate = timer.nextFireInstant
            // The input: the loop is busy for 350 ms (blocks run before
            // timers), over three fire dates: a block during which the
            // clock moves on by 350 ms.
            loop.perform { clock.advance(by: .milliseconds(350)) }
            // Then time passes while the loop sleeps, 30 ms at a time
            // (not a divisor of the interval, so fires come late by varying amounts).
            clock.advanceWhenIdle(loop, by: .milliseconds(30))
            return (loop.run(mode: .default, seconds: 10), firstDate)
        }

        #expect(result == .finished)
        let fired = fires.value, next = nextDates.value
        try #require(fired.count == 3 && next.count == 3)
        #expect(fired[0] > firstDate + 2 * interval, "the first fire should be late, after the busy block")
        for index in 0..<3 {
            // The next date is on the original schedule, and the next multiple after the fire.
            #expect((next[index] - firstDate) % interval == 0, "fire date moved off the original schedule")
            #expect(next[index] > fired[index] && next[index] - interval <= fired[index])
        }
        // No burst: after the late fire, the next one waits for the next date.
        #expect(fired[1] >= next[0], "missed fires were delivered in a burst")
        #expect(fired[2] >= next[1])
    }

    @Test("S-TMR-2, S-TMR-7: a timer fires only while its loop runs one of its modes; late, it fires once")
    func timerWaitsForItsMode() throws {
        // Instants and fire times are on the loop's test clock.
        let interval = 50 * Self.ms
        let fires = Locked<[UInt64]>([])
        let nextDates = Locked<[UInt64]>([])
        let (otherResult, firesInOtherMode, result, firstDate, otherEnded) =
            try TestClockThread<(RunLoop.RunResult, Int, RunLoop.RunResult, UInt64, UInt64)>.run(named: "tmr-mode") { clock, loop in
                let other = RunLoop.Mode("S-TMR-2.other")
                loop.add(keepAliveSource(), forMode: other)
                let timer = try loop.scheduledTimer(withTimeInterval: 0.05, repeats: true) { timer in
                    let now = clock.manual.nowInstant
                    // After the callout, when the next date is set (S-TMR-6).
                    loop.perform { nextDates.append(timer.nextFireInstant) }
                    if fires.withLock({ $0.append(now); return $0.count }) == 2 { timer.invalidate() }
                }
                let firstDate = timer.nextFireInstant
                // Time passes while the loop sleeps: 50 ms at a time in
                // `other`, 20 ms at a time in the default mode.
                clock.advanceWhenIdle(loop, by: .milliseconds(50), mode: other)
                clock.advanceWhenIdle(loop, by: .milliseconds(20), mode: .default)
                // Six fire dates pass while the loop runs a mode the timer is not in.
                let otherResult = loop.run(mode: other, seconds: 0.3)
                let otherEnded = clock.manual.nowInstant
                let firesInOther = fires.value.count
                return (otherResult, firesInOther, loop.run(mode: .default, seconds: 10), firstDate, otherEnded)
            }

        #expect(otherResult == .timedOut)
        #expect(firesInOtherMode == 0, "the timer fired while the loop ran a mode it is not in")
        #expect(result == .finished)
        let fired = fires.value, next = nextDates.value
        try #require(fired.count == 2 && next.count == 2)
        #expect(fired[0] >= otherEnded)
        #expect((next[0] - firstDate) % interval == 0 && next[0] > fired[0] && next[0] - interval <= fired[0])
        #expect(next[0] > firstDate + 5 * interval)
        #expect(fired[1] >= next[0], "the missed fires were delivered in a burst")
    }
}
