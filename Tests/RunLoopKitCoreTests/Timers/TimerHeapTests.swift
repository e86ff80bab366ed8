// Timers: S-TMR-1 to S-TMR-6. Every loop here runs on a thread made for the
// test.
//
// Where timing itself is not the subject, the loop runs on a TestClock
// (S-TMR-7): time moves only when the test advances it, directly or with
// `advanceWhenIdle` (an observer that moves the clock a step each time the
// loop is about to sleep), and the assertions are the same, in test-clock
// instants. On the test clock: a timer in two modes (S-TMR-1), skipping
// missed fires after a busy loop and firing only in its modes (S-TMR-2),
// invalidation from another thread while asleep or during a fire, one-shot
// self-invalidation, and a repeating timer invalidated on its second fire
// ending the run with .finished (S-TMR-4); and every S-TMR-6 test below.
// Fire-date order on the test clock is proven in TestClockTests
// (fireDateOrderAndNoBurst).
//
// These stay on the real clock, because real time is what they test:
// - neverEarly (S-TMR-1, S-TMR-2): never early against CLOCK_MONOTONIC, the
//   clock the timerfd and the wake-up run on;
// - toleranceCoalesces (S-TMR-3): tolerance decides when the loop arms its
//   timerfd to wake; a test-clock loop never sleeps for a timer (it fires
//   what is due when an advance wakes it), so coalescing cannot be seen
//   there. Its logic alone is scheduleMatchesLookingAtEveryTimer's;
// - zeroToleranceWakesAtDate (S-TMR-3): wake-up latency;
// - fireDateMovedEarlier / fireDateMovedLater (S-TMR-5): the loop re-arms
//   its timerfd when fireDate moves while it sleeps.
// toleranceClamps and scheduleMatchesLookingAtEveryTimer run no loop and
// wait for nothing (the latter only builds instants from the monotonic
// clock). In other files: ModeTests' addCommonModeLaterBringsCommonItems
// keeps the real clock: its timer is due at once, so no time needs to pass,
// and its only deadline bounds the wait for a ZeroMQ message, input from
// outside the loop, which a test-clock deadline would no longer bound.
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Timers (S-TMR)")
struct TimerTests {
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
        // Wake-up latency only; the bound is loose because tests run in parallel (and under TSan).
        #expect(fired - date < 500 * Self.ms, "zero-tolerance timer was \((fired - date) / Self.ms) ms late")
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

    @Test("S-TMR-4, S-TMR-7: invalidate() from another thread while the loop sleeps ends the run with .finished")
    func invalidateFromAnotherThreadWhileSleeping() throws {
        let asleep = DispatchSemaphore(value: 0)
        let timerBox = Locked<Timer?>(nil)
        let fires = Locked(0)
        let loopThread = TestClockThread<(RunLoop.RunResult, UInt64)>(named: "tmr-inv1") { clock, loop in
            let timer = try loop.scheduledTimer(withTimeInterval: 20, repeats: true) { _ in fires.withLock { $0 += 1 } }
            timerBox.value = timer
            signalBeforeWaiting(asleep, on: loop)
            let start = clock.manual.nowInstant
            let result = loop.run(mode: .default, seconds: 30)
            return (result, clock.manual.nowInstant - start)
        }
        #expect(waitFor(asleep))
        try #require(timerBox.value).invalidate()
        let (result, elapsed) = try loopThread.join()
        #expect(result == .finished)
        // Neither the timer's date (20 s) nor the run's deadline (30 s) came on
        // the test clock, which nobody advanced: only invalidate() woke the loop.
        #expect(elapsed == 0, "the loop was not woken by invalidate()")
        #expect(fires.value == 0)
        #expect(timerBox.value?.isValid == false)
    }

    @Test("S-TMR-4, S-TMR-7: invalidate() from another thread during a fire: no fire after it")
    func invalidateFromAnotherThreadDuringFire() throws {
        let third = DispatchSemaphore(value: 0)
        let invalidated = DispatchSemaphore(value: 0)
        let timerBox = Locked<Timer?>(nil)
        let fires = Locked(0)
        let loopThread = TestClockThread<RunLoop.RunResult>(named: "tmr-inv2") { clock, loop in
            let timer = try loop.scheduledTimer(withTimeInterval: 0.01, repeats: true) { _ in
                if fires.withLock({ $0 += 1; return $0 }) == 3 {
                    third.signal()
                    _ = waitFor(invalidated)
                }
            }
            timerBox.value = timer
            // Still valid after the third fire, it would fire again at the
            // next step; the run's 30 s pass in 3,000 steps, not forever.
            clock.advanceWhenIdle(loop, by: .milliseconds(10))
            return loop.run(mode: .default, seconds: 30)
        }
        #expect(waitFor(third))
        let timer = try #require(timerBox.value)
        timer.invalidate()
        timer.invalidate()  // idempotent
        invalidated.signal()
        #expect(try loopThread.join() == .finished)
        #expect(fires.value == 3)
        #expect(!timer.isValid)
    }

    @Test("S-TMR-4, S-TMR-7: a one-shot timer invalidates itself after firing")
    func oneShotInvalidatesItself() throws {
        let validDuringFire = Locked<Bool?>(nil)
        let (result, valid, contained) = try TestClockThread<(RunLoop.RunResult, Bool, Bool)>.run(named: "tmr-once") { clock, loop in
            let timer = try loop.scheduledTimer(withTimeInterval: 0.01, repeats: false) { timer in validDuringFire.value = timer.isValid }
            clock.advanceWhenIdle(loop, by: .milliseconds(10))
            let result = loop.run(mode: .default, seconds: 10)
            return (result, timer.isValid, loop.contains(timer, inMode: .default))
        }
        #expect(result == .finished)
        #expect(validDuringFire.value == true)
        #expect(!valid)
        #expect(!contained)
    }

    @Test("S-TMR-4, S-TMR-7: the classic example: a repeating timer invalidated on its second fire ends the run with .finished")
    func classicTimerExample() throws {
        let count = Locked(0)
        let result = try TestClockThread<RunLoop.RunResult>.run(named: "tmr-classic") { clock, loop in
            try loop.scheduledTimer(withTimeInterval: 0.02, repeats: true) { timer in
                if count.withLock({ $0 += 1; return $0 }) == 2 { timer.invalidate() }
            }
            clock.advanceWhenIdle(loop, by: .milliseconds(20))
            return loop.run(mode: .default, seconds: 10)
        }
        #expect(result == .finished)
        #expect(count.value == 2)
    }

    /// What a timer's block captures and what holds the timer: the owner in
    /// NSTimer's classic retain cycle, which `invalidate()` breaks.
    final class TimerOwner: Sendable {
        let timer = Locked<Timer?>(nil)
        let log = Locked<[String]>([])
    }

    @Test("S-TMR-4: an invalid timer lets go of its block and userInfo, as NSTimer lets go of its target: an owner that holds the timer and is captured by them is freed at invalidate() from another thread, while the timer itself is still referenced")
    func invalidateReleasesTheBlock() throws {
        let thread = LoopThread(name: "tmr-release")
        try thread.start()
        defer { thread.stop() }
        let loop = try #require(thread.runLoop)
        let (timer, owner, info) = try { () throws -> (Timer, WeakReference<TimerOwner>, WeakReference<TimerOwner>) in
            let owner = TimerOwner()
            let info = TimerOwner()
            let timer = try Timer(timeInterval: 3600, userInfo: info, repeats: true) { _ in owner.log.withLock { $0.append("fired") } }
            owner.timer.value = timer  // the cycle: owner → timer → block → owner
            loop.add(timer, forMode: .default)
            return (timer, WeakReference(owner), WeakReference(info))
        }()
        #expect(owner.object != nil, "the block keeps its owner while the timer is valid")
        #expect(info.object != nil && timer.userInfo != nil)
        timer.invalidate()
        #expect(owner.object == nil, "the owner outlived invalidate(): the timer kept its block")
        #expect(info.object == nil, "the timer kept its userInfo after invalidate()")
        #expect(timer.userInfo == nil)
        #expect(!timer.isValid)
        timer.fire()  // an invalid timer fires nothing, and has nothing to fire
    }

    @Test("S-TMR-4, S-TMR-7: a timer invalidated inside its own block runs that block to its end, then lets go of it; a one-shot timer lets go of its block once it has fired")
    func invalidateInsideTheBlockAndOneShotRelease() throws {
        let (timers, log, owners) = try TestClockThread<([Timer], [String], [WeakReference<TimerOwner>])>.run(named: "tmr-release2") { clock, loop in
            let repeating = TimerOwner()
            let oneShot = TimerOwner()
            let first = try loop.scheduledTimer(withTimeInterval: 0.01, repeats: true) { timer in
                repeating.log.withLock { $0.append("before") }
                timer.invalidate()
                // Still running, with what it captured: the fire holds the block.
                repeating.log.withLock { $0.append("after") }
            }
            repeating.timer.value = first
            let second = try loop.scheduledTimer(withTimeInterval: 0.02, repeats: false) { _ in
                oneShot.log.withLock { $0.append("once") }
            }
            oneShot.timer.value = second
            clock.advanceWhenIdle(loop, by: .milliseconds(10))
            _ = loop.run(mode: .default, seconds: 10)
            return ([first, second], repeating.log.value + oneShot.log.value, [WeakReference(repeating), WeakReference(oneShot)])
        }
        #expect(log == ["before", "after", "once"])
        #expect(timers.allSatisfy { !$0.isValid })
        #expect(owners[0].object == nil, "a timer invalidated in its block kept the block")
        #expect(owners[1].object == nil, "a fired one-shot timer kept its block")
    }

    @Test("S-TMR-5: fireDate moved earlier from another thread while the loop sleeps re-arms it")
    func fireDateMovedEarlier() throws {
        let (result, moved, firedAt) = try Self.moveFireDateWhileAsleep("tmr-earlier", dueIn: 60, movedTo: 0.05)
        #expect(result == .finished, "the timer did not fire before the run's deadline")
        // Never early (1 ms for the Date conversion), and far before the old date.
        #expect(firedAt >= moved + 49 * Self.ms)
        #expect(firedAt < moved + 10_000 * Self.ms)
    }

    @Test("S-TMR-5: fireDate moved later from another thread while the loop sleeps: it fires at the new date")
    func fireDateMovedLater() throws {
        let (result, moved, firedAt) = try Self.moveFireDateWhileAsleep("tmr-later", dueIn: 0.5, movedTo: 0.8)
        #expect(result == .finished)
        #expect(firedAt >= moved + 799 * Self.ms, "the timer fired at its old date")
    }

    /// Runs a loop (up to 30 s) with one timer due in `dueIn` seconds; once
    /// the loop sleeps, this thread sets the timer's fireDate to `movedTo`
    /// seconds from now. Returns the run's result, when the date was moved
    /// and when the timer fired (monotonic ns).
    static func moveFireDateWhileAsleep(
        _ name: String, dueIn: TimeInterval, movedTo: TimeInterval
    ) throws -> (result: RunLoop.RunResult, moved: UInt64, fired: UInt64) {
        let asleep = DispatchSemaphore(value: 0)
        let timerBox = Locked<Timer?>(nil)
        let fired = Locked<UInt64>(0)
        let loopThread = SpawnedThread<RunLoop.RunResult>(named: name) {
            let loop = RunLoop.current
            let timer = try Timer(timeInterval: dueIn, repeats: false) { _ in fired.value = monotonicNow() }
            timerBox.value = timer
            loop.add(timer, forMode: .default)
            signalBeforeWaiting(asleep, on: loop)
            return loop.run(mode: .default, seconds: 30)
        }
        #expect(waitFor(asleep))
        let timer = try #require(timerBox.value)
        let moved = monotonicNow()
        timer.fireDate = Date(timeIntervalSinceNow: movedTo)
        let result = try loopThread.join()
        return (result, moved, fired.value)
    }

    @Test("S-TMR-2, S-TMR-5, S-TMR-7 at scale: 10,000 timers in the default mode, another mode and the common modes, some moved and some invalidated before the run and more from callouts while it runs: each fires once, only while its loop runs one of its modes, never early, within one clock step when the loop runs its mode, in fire-date order")
    func timersAtScaleInSeveralModes() throws {
        // Dates and fire times are the clock's instants (ns): a Date, a
        // Double of seconds since 2001, rounds them to about 0.1 µs.
        struct Fire { let index: Int; let date: UInt64; let now: UInt64; let mode: RunLoop.Mode?; let inOtherRun: Bool }
        final class Record: @unchecked Sendable {
            // @unchecked Sendable: touched on the test's loop thread only.
            var fires: [Fire] = []
            var invalidated: Set<Int> = []
            var timers: [RunLoopKitCore.Timer] = []
            var inOtherRun = false
            var generator = SystemRandomNumberGenerator()
        }
        let count = 10_000
        let other = RunLoop.Mode("S-TMR-2.scale")
        let modes: [RunLoop.Mode] = [.default, other, .common]
        let record = try SpawnedThread<Record>(named: "tmr-scale") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            let start = clock.now
            let record = Record()
            // A random timer other than the one firing, if still valid,
            // moved to `now` or later (S-TMR-5), or invalidated (S-TMR-4).
            @Sendable func changeOne(move: Bool, firing: Int? = nil) {
                let index = Int.random(in: 0..<count, using: &record.generator)
                let timer = record.timers[index]
                guard timer.isValid, index != firing else { return }
                if move {
                    // At least a step ahead: a Date rounds the clock's
                    // instant to about 0.1 µs, and a date that lands on the
                    // very instant being fired is taken at the next step.
                    timer.fireDate = clock.now + Double.random(in: 0.001..<0.2, using: &record.generator)
                } else {
                    timer.invalidate()
                    record.invalidated.insert(index)
                }
            }
            // Every date at least a step after the start: a date that
            // rounds to the start instant itself is due before the first
            // pass, which tells beforeWaiting (advancing the clock a step)
            // before step 9 fires it, as CFRunLoop's order has it. It would
            // fire one step late by this test's measure (seen once in about
            // 200 runs: a date 0.5 µs after the start).
            record.timers = try (0..<count).map { index in
                try RunLoopKitCore.Timer(fire: start + Double.random(in: 0.001..<1, using: &record.generator), interval: 0, repeats: false) { timer in
                    record.fires.append(Fire(index: index, date: timer.nextFireInstant, now: clock.manual.nowInstant,
                                             mode: loop.currentMode, inOtherRun: record.inOtherRun))
                    if record.fires.count % 7 == 0 { changeOne(move: true, firing: index) }
                    if record.fires.count % 11 == 0 { changeOne(move: false, firing: index) }
                }
            }
            for (index, timer) in record.timers.enumerated() { loop.add(timer, forMode: modes[index % 3]) }
            // Before the run: 1,500 moves (earlier or later), 1,000 invalidations.
            for _ in 0..<1500 {
                record.timers[Int.random(in: 0..<count, using: &record.generator)].fireDate = start + Double.random(in: 0.001..<1, using: &record.generator)
            }
            for _ in 0..<1000 { changeOne(move: false) }
            // The default mode until its timers are gone (1.5 s of the
            // clock at most), a millisecond at a time while idle; then the
            // other mode.
            let defaultStep = clock.advanceWhenIdle(loop, by: .milliseconds(1), mode: .default)
            _ = loop.run(mode: .default, seconds: 1.5)
            defaultStep.invalidate()
            record.inOtherRun = true
            clock.advanceWhenIdle(loop, by: .milliseconds(1), mode: other)
            _ = loop.run(mode: other, seconds: 0.5)
            // Each timer's block holds the record, which holds the timers.
            record.timers.removeAll()
            return record
        }.join()

        let fired = record.fires.map(\.index)
        #expect(Set(fired).count == fired.count, "a timer fired twice")
        #expect(Set(fired) == Set(0..<count).subtracting(record.invalidated), "fired: \(fired.count), invalidated: \(record.invalidated.count) of \(count)")
        #expect(record.invalidated.count >= 900)
        #expect(record.fires.allSatisfy { $0.now >= $0.date }, "a timer fired early")
        let inDefault = record.fires.filter { !$0.inOtherRun }
        let inOther = record.fires.filter(\.inOtherRun)
        // S-TMR-2: only in their modes. The default run lasts until no
        // default or common-modes timer is left.
        #expect(inDefault.allSatisfy { $0.mode == .default && $0.index % 3 != 1 })
        #expect(inOther.allSatisfy { $0.mode == other && $0.index % 3 == 1 })
        #expect(inOther.count > 2000)
        // While the loop runs its mode, a timer fires within one step of its date.
        let late = inDefault.filter { !($0.now >= $0.date && $0.now - $0.date < Self.ms) }
        #expect(late.isEmpty, "late by more than a clock step: \(late.prefix(3).map { "timer \($0.index) (mode \($0.index % 3)) due \($0.date) fired \($0.now)" })")
        // In fire-date order, in each run.
        for run in [inDefault, inOther] {
            #expect(zip(run, run.dropFirst()).allSatisfy { $0.date <= $1.date }, "out of fire-date order")
        }
    }

    @Test("S-TMR-1: a timer in the heaps of several modes (the common items and three common modes) keeps its own place in each: leaving one, and moving its date, leaves it where it is in the others")
    func timerInSeveralHeaps() throws {
        let base = MonotonicClock.now() + 1_000_000_000
        func timer(at milliseconds: UInt64) throws -> RunLoopKitCore.Timer {
            try RunLoopKitCore.Timer(fire: MonotonicClock.date(for: base + milliseconds * 1_000_000), interval: 0, repeats: false) { _ in }
        }
        // Four heaps, each with other members before the shared timer, so
        // that its place differs from heap to heap.
        var heaps = (1...4).map { TimerHeap(id: UInt32($0)) }
        var others: [RunLoopKitCore.Timer] = []
        for (index, _) in heaps.enumerated() {
            for step in 0..<index * 3 {
                let other = try timer(at: 100 + UInt64(step))
                let joined = heaps[index].insert(other)
                #expect(joined)
                others.append(other)
            }
        }
        let shared = try timer(at: 50)
        let joined = heaps.indices.map { heaps[$0].insert(shared) }
        #expect(joined == [true, true, true, true])
        #expect(TimerHeapPlaces.hasSpilledRecords(of: ObjectIdentifier(shared)), "two of its four records are kept out of line")
        #expect(heaps.allSatisfy { $0.contains(shared) && $0.earliest == shared.nextFireInstant })
        let again = heaps[2].insert(shared)
        #expect(!again, "a second insert of a member")

        // Out of the second heap only.
        let left = heaps[1].remove(shared)
        let leftAgain = heaps[1].remove(shared)
        #expect(left && !leftAgain && !heaps[1].contains(shared))
        #expect(heaps[1].settledEarliest() == others[0].nextFireInstant, "its first other member, 100 ms after the base")
        #expect([0, 2, 3].allSatisfy { heaps[$0].contains(shared) })

        // Moved later: each heap it is still in moves it, and finds it last.
        shared.fireDate = MonotonicClock.date(for: base + 200 * 1_000_000)
        for index in heaps.indices { heaps[index].reschedule(shared) }
        #expect(heaps[0].earliest == shared.nextFireInstant, "the first heap holds it alone")
        for index in [2, 3] {
            var due: [RunLoopKitCore.Timer] = []
            heaps[index].takeDue(now: base + 300 * 1_000_000, into: &due)
            #expect(due.last === shared && due.count == index * 3 + 1)
        }
        // It leaves the rest; the heaps keep their other members.
        let leftRest = [0, 2, 3].map { heaps[$0].remove(shared) }
        #expect(leftRest == [true, true, true])
        #expect(heaps.allSatisfy { !$0.contains(shared) })
        #expect(!TimerHeapPlaces.hasSpilledRecords(of: ObjectIdentifier(shared)), "its records out of line went with it")
        #expect(heaps.map(\.count) == [0, 3, 6, 9])

        // The common items' kind of heap keeps members in joining order
        // and no order by instant: nothing to fire from there.
        var common = TimerHeap(id: 5, ordersByInstant: false)
        let members = [shared] + others.prefix(4)
        let joinedCommon = members.map { common.insert($0) }
        #expect(joinedCommon.allSatisfy { $0 } && common.count == 5)
        #expect(common.earliest == MonotonicClock.never)
        var none: [RunLoopKitCore.Timer] = []
        common.takeDue(now: MonotonicClock.never - 1, into: &none)
        #expect(none.isEmpty)
        let leftCommon = common.remove(others[1])
        #expect(leftCommon && !common.contains(others[1]))
        #expect(common.timers.map(ObjectIdentifier.init) == [shared, others[0], others[2], others[3]].map(ObjectIdentifier.init))
        #expect(heaps[2].contains(others[3]), "its place in another heap stays")
        for other in others { other.invalidate() }
        shared.invalidate()
    }

    @Test("S-TMR-2, S-TMR-3: the loop's timer heap, after inserts, removals, inserts again and moved fire dates, finds the due timers earliest first (equal instants in joining order) and the same wake-up as looking at every timer")
    func heapMatchesLookingAtEveryTimer() throws {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<50 {
            let base = MonotonicClock.now() + 1_000_000_000
            var timers = try (0..<200).map { _ in
                let timer = try RunLoopKitCore.Timer(
                    fire: MonotonicClock.date(for: base + UInt64.random(in: 0..<100, using: &generator) * 1_000_000),
                    interval: 1, repeats: true) { _ in }
                if Bool.random(using: &generator) { timer.tolerance = Double.random(in: 0..<0.05, using: &generator) }
                return timer
            }
            var heap = TimerHeap()
            let inserted = timers.map { heap.insert($0) }
            #expect(inserted.allSatisfy { $0 })
            let again = heap.insert(timers[0])
            #expect(!again, "a second insert of a member")
            // Remove a quarter, move a quarter (earlier and later).
            for _ in 0..<50 {
                let index = Int.random(in: 0..<timers.count, using: &generator)
                let removed = heap.remove(timers[index])
                #expect(removed)
                timers[index].invalidate()
                timers.remove(at: index)
            }
            // New members after removals take the removed ones' places in
            // the heap's bookkeeping: they must join last all the same.
            for _ in 0..<25 {
                let timer = try RunLoopKitCore.Timer(
                    fire: MonotonicClock.date(for: base + UInt64.random(in: 0..<100, using: &generator) * 1_000_000),
                    interval: 1, repeats: true) { _ in }
                let joined = heap.insert(timer)
                #expect(joined)
                timers.append(timer)
            }
            #expect(heap.timers.map(ObjectIdentifier.init) == timers.map(ObjectIdentifier.init), "members in joining order")
            for timer in timers.prefix(50) {
                timer.fireDate = MonotonicClock.date(for: base + UInt64.random(in: 0..<100, using: &generator) * 1_000_000)
                heap.reschedule(timer)
            }
            #expect(heap.count == timers.count)
            // Every timer's window, the slow way: the latest fire date within the earliest window's end.
            let deadline = timers.map(\.latestWakeInstant).min()!
            let expectedWake = timers.map(\.nextFireInstant).filter { $0 <= deadline }.max()!
            #expect(heap.settledEarliest() == timers.map(\.nextFireInstant).min()!)
            #expect(heap.wakeInstant() == expectedWake)
            // Half of them due: all of those, in fire order, and none of the others.
            let now = base + 50_000_000
            var due: [RunLoopKitCore.Timer] = []
            heap.takeDue(now: now, into: &due)
            let expectedDue = timers.filter { $0.nextFireInstant <= now }
            #expect(Set(due.map(ObjectIdentifier.init)) == Set(expectedDue.map(ObjectIdentifier.init)))
            #expect(due.map(\.nextFireInstant) == due.map(\.nextFireInstant).sorted())
            // Equal instants come out in joining order (the timers array's order, among survivors).
            for (first, second) in zip(due, due.dropFirst()) where first.nextFireInstant == second.nextFireInstant {
                #expect(timers.firstIndex { $0 === first }! < timers.firstIndex { $0 === second }!)
            }
            #expect(heap.earliest > now)
            // Taken out, they go back with reinsert; members all the same.
            #expect(heap.count == timers.count)
            for timer in due { heap.reinsert(timer) }
            #expect(heap.settledEarliest() == timers.map(\.nextFireInstant).min()!)
            for timer in timers { timer.invalidate() }
        }
    }

    @Test("S-TMR-2, S-TMR-5, S-TMR-7: the timer heap leaves a timer moved later where it was until it comes to the top: among removals and ties it comes out at its new date and not its old, removed timers never come out, equal instants keep joining order")
    func heapMovesLaterTimersLate() throws {
        var generator = SystemRandomNumberGenerator()
        let base = MonotonicClock.now() + 1_000_000_000
        func timer(at milliseconds: UInt64) throws -> RunLoopKitCore.Timer {
            try RunLoopKitCore.Timer(fire: MonotonicClock.date(for: base + milliseconds * 1_000_000), interval: 0, repeats: false) { _ in }
        }
        var heap = TimerHeap()
        // Ten instants only, so that many entries tie and order decides.
        var members = try (0..<2_000).map { _ in try timer(at: UInt64.random(in: 0..<10, using: &generator)) }
        for member in members { _ = heap.insert(member) }
        var removed: [RunLoopKitCore.Timer] = []
        var moved = Set<ObjectIdentifier>()
        for round in 0..<1_800 {
            let index = Int.random(in: 0..<members.count, using: &generator)
            if round % 3 == 2 {
                // Later, as Timer.fireDate's setter leaves it: no reschedule.
                members[index].fireDate = MonotonicClock.date(for: base + (20 + UInt64.random(in: 0..<10, using: &generator)) * 1_000_000)
                moved.insert(ObjectIdentifier(members[index]))
            } else {
                let gone = members.remove(at: index)
                let left = heap.remove(gone)
                #expect(left)
                removed.append(gone)
                moved.remove(ObjectIdentifier(gone))
            }
        }
        #expect(heap.count == members.count && !moved.isEmpty)
        // The top is a moved timer's old instant until settled.
        let settled = heap.settledEarliest()
        #expect(settled == members.map(\.nextFireInstant).min())
        // Due at the old dates: only members not moved, in (instant, joining) order.
        var due: [RunLoopKitCore.Timer] = []
        heap.takeDue(now: base + 15 * 1_000_000, into: &due)
        let gone = Set(removed.map(ObjectIdentifier.init))
        #expect(!due.contains { gone.contains(ObjectIdentifier($0)) }, "a removed timer came out")
        #expect(!due.contains { moved.contains(ObjectIdentifier($0)) }, "a timer moved later came out at its old date")
        let expected = members.filter { !moved.contains(ObjectIdentifier($0)) }
        #expect(due.map(ObjectIdentifier.init) == expected.sorted { $0.nextFireInstant < $1.nextFireInstant }.map(ObjectIdentifier.init),
                "by instant, equal instants in joining order (a stable sort of the members in joining order)")
        // The moved ones at their new dates, never before, in fire order.
        #expect(heap.settledEarliest() == members.filter { moved.contains(ObjectIdentifier($0)) }.map(\.nextFireInstant).min())
        var early: [RunLoopKitCore.Timer] = []
        // (A date is a Double of seconds: its instant may round by a tenth of a microsecond.)
        heap.takeDue(now: base + 19 * 1_000_000, into: &early)
        #expect(early.isEmpty, "a timer moved later came out before its new date")
        var later: [RunLoopKitCore.Timer] = []
        heap.takeDue(now: base + 40 * 1_000_000, into: &later)
        #expect(Set(later.map(ObjectIdentifier.init)) == moved)
        #expect(later.map(\.nextFireInstant) == later.map(\.nextFireInstant).sorted())
        #expect(heap.settledEarliest() == MonotonicClock.never)
        for timer in members + removed { timer.invalidate() }
    }

    @Test("S-TMR-1: a timer in the common items and two common modes keeps its common items' record out of line and its modes' inline, where every sift rewrites them; each heap still finds it")
    func commonItemsRecordGoesOutOfLineFirst() throws {
        let base = MonotonicClock.now() + 1_000_000_000
        func timer(at milliseconds: UInt64) throws -> RunLoopKitCore.Timer {
            try RunLoopKitCore.Timer(fire: MonotonicClock.date(for: base + milliseconds * 1_000_000), interval: 0, repeats: false) { _ in }
        }
        var common = TimerHeap(id: 1, ordersByInstant: false)
        var modes = [TimerHeap(id: 2), TimerHeap(id: 3)]
        let shared = try timer(at: 50)
        let identity = ObjectIdentifier(shared)
        // Joined as the loop joins a common-modes timer: the common items first.
        let joinedCommon = common.insert(shared)
        let joinedFirst = modes[0].insert(shared)
        #expect(joinedCommon && joinedFirst)
        #expect(!TimerHeapPlaces.hasSpilledRecords(of: identity), "two records fit inline")
        let joinedSecond = modes[1].insert(shared)
        #expect(joinedSecond)
        #expect(TimerHeapPlaces.hasSpilledRecords(of: identity), "the third record went out of line")
        // Others sifted past it in both modes: its places there change at each swap.
        let others = try (0..<20).map { try timer(at: UInt64($0)) }
        for other in others {
            let joined = [modes[0].insert(other), modes[1].insert(other)]
            #expect(joined == [true, true])
        }
        // Leaving the common items empties the table: theirs was the record out of line.
        let leftCommon = common.remove(shared)
        #expect(leftCommon)
        #expect(!TimerHeapPlaces.hasSpilledRecords(of: identity), "the common items' record was the one kept out of line")
        for index in modes.indices {
            #expect(modes[index].contains(shared))
            var due: [RunLoopKitCore.Timer] = []
            modes[index].takeDue(now: base + 60 * 1_000_000, into: &due)
            #expect(due.count == 21 && due.last === shared, "every timer due, the shared one last")
            let left = modes[index].remove(shared)
            #expect(left, "a member taken out to fire leaves from outside the heap")
            #expect(!modes[index].contains(shared) && modes[index].count == 20)
        }
        for other in others { other.invalidate() }
        shared.invalidate()
    }

    @Test("S-TMR-1, S-TMR-4, S-TMR-5: timers added to a running loop from one thread while a second moves their fire dates and a third invalidates them: each ends invalid, in no mode and bound to no loop")
    func addMoveAndInvalidateRace() throws {
        let thread = LoopThread(name: "tmr-race")
        try thread.start()
        defer { thread.stop() }
        let loop = try #require(thread.runLoop)
        let timers = try (0..<2_000).map { index in
            // Due within 50 ms, so that some fire while the others race.
            try Timer(fire: Date() + 0.001 * Double(index % 50), interval: 0.001, repeats: true) { _ in }
        }
        let modes: [RunLoop.Mode] = [.default, .common, RunLoop.Mode("tmr-race-other")]
        let done = DispatchGroup()
        DispatchQueue.global().async(group: done) {
            for (index, timer) in timers.enumerated() { loop.add(timer, forMode: modes[index % modes.count]) }
        }
        DispatchQueue.global().async(group: done) {
            for (index, timer) in timers.enumerated() { timer.fireDate = Date() + (index % 2 == 0 ? -0.001 : 0.002) }
        }
        DispatchQueue.global().async(group: done) {
            for timer in timers { timer.invalidate() }
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        // Whatever the order, every timer ends where its invalidation leaves it.
        let held = try thread.performAndWait(timeout: .seconds(30)) {
            timers.filter { timer in modes.contains { loop.holds(timer, inMode: $0) } }.count
        }
        #expect(held == 0, "an invalidated timer stayed in a mode")
        #expect(timers.allSatisfy { !$0.isValid && $0.loop == nil })
    }

    @Test("S-TMR-1: a timer in three heaps that is freed without leaving them (its loop torn down) takes its records kept out of line with it")
    func spilledSlotsGoWithTheTimer() throws {
        var heaps = (1...3).map { TimerHeap(id: UInt32($0)) }
        var timer: RunLoopKitCore.Timer? = try RunLoopKitCore.Timer(
            fire: MonotonicClock.date(for: MonotonicClock.now() + 1_000_000_000), interval: 0, repeats: false) { _ in }
        let identity = ObjectIdentifier(timer!)
        for index in heaps.indices { _ = heaps[index].insert(timer!) }
        #expect(TimerHeapPlaces.hasSpilledRecords(of: identity))
        // The heaps go first, as a torn-down loop's do, then the last reference.
        heaps = []
        timer = nil
        #expect(!TimerHeapPlaces.hasSpilledRecords(of: identity))
    }

    @Test("S-TMR-7: joining orders numbered again at the end of their range keep equal instants in joining order")
    func heapRenumbersOrders() throws {
        let instant = MonotonicClock.now() + 1_000_000_000
        var heap = TimerHeap(firstOrder: .max - 3)
        let timers = try (0..<10).map { _ in
            try RunLoopKitCore.Timer(fire: MonotonicClock.date(for: instant), interval: 0, repeats: false) { _ in }
        }
        for timer in timers.prefix(6) { _ = heap.insert(timer) }
        _ = heap.remove(timers[1])
        for timer in timers.dropFirst(6) { _ = heap.insert(timer) }
        #expect(heap.timers.map(ObjectIdentifier.init) == timers.enumerated().filter { $0.offset != 1 }.map { ObjectIdentifier($0.element) })
        // Dates become instants through the wall clock: they may differ
        // by a nanosecond, so the expected order is a stable sort by
        // instant of the joining order.
        var due: [RunLoopKitCore.Timer] = []
        heap.takeDue(now: instant + 1_000_000, into: &due)
        let members = timers.enumerated().filter { $0.offset != 1 }.map(\.element)
        #expect(due.map(ObjectIdentifier.init) == members.sorted { $0.nextFireInstant < $1.nextFireInstant }.map(ObjectIdentifier.init))
        for timer in timers { timer.invalidate() }
    }
}

@Suite("Timer fire dates (S-TMR-6)")
struct TimerFireDateTests {
    @Test("S-TMR-6: a timer made with a fire date reports exactly that date")
    func exactFireDate() throws {
        let now = Date()
        for date in [now + 0.123_456_789, now - 3_600.000_001, now + 86_400 * 365, Date(timeIntervalSinceReferenceDate: 0)] {
            let timer = try Timer(fire: date, interval: 0, repeats: false) { _ in }
            #expect(timer.fireDate == date)
            let moved = date + 1.000_000_1
            timer.fireDate = moved
            #expect(timer.fireDate == moved)
        }
    }

    @Test("S-TMR-6: inside its callout a timer's fireDate is the date being fired; the next date is set after the callout")
    func fireDateDuringCallout() throws {
        let seenOneShot = Locked<Date?>(nil), seenRepeating = Locked<[Date]>([])
        let (oneShotDate, repeatStart, afterFirst, afterSecond, oneShotValid) =
            try SpawnedThread<(Date, Date, Date, Date, Bool)>(named: "tmr-date") {
                let clock = TestClock()
                let loop = RunLoop.current
                loop.use(clock)
                let oneShotDate = clock.now + 1
                let oneShot = try Timer(fire: oneShotDate, interval: 0, repeats: false) { timer in
                    seenOneShot.value = timer.fireDate
                }
                let repeatStart = clock.now + 2
                let repeating = try Timer(fire: repeatStart, interval: 0.25, repeats: true) { timer in
                    seenRepeating.withLock { $0.append(timer.fireDate) }
                }
                loop.add(oneShot, forMode: .default)
                loop.add(repeating, forMode: .default)
                clock.advance(by: .seconds(2))
                loop.run(mode: .default, seconds: 0)
                let afterFirst = repeating.fireDate
                clock.advance(by: .milliseconds(250))
                loop.run(mode: .default, seconds: 0)
                return (oneShotDate, repeatStart, afterFirst, repeating.fireDate, oneShot.isValid)
            }.join()
        // CFRunLoop keeps the date being fired until the callout returns:
        // not distantFuture for a one-shot timer, not already the next date.
        #expect(seenOneShot.value == oneShotDate)
        #expect(!oneShotValid, "a one-shot timer invalidates itself after firing (S-TMR-4)")
        #expect(seenRepeating.value == [repeatStart, repeatStart + 0.25])
        #expect(afterFirst == repeatStart + 0.25)
        #expect(afterSecond == repeatStart + 0.5)
    }

    @Test("S-TMR-6, S-RUN-8: a nested run inside a timer's callout does not fire that timer again")
    func nestedRunDoesNotRefire() throws {
        let calls = Counter()
        let nested = try SpawnedThread<RunLoop.RunResult>(named: "tmr-nest") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            let inner = Locked<RunLoop.RunResult?>(nil)
            let timer = try Timer(fire: clock.now + 1, interval: 1, repeats: true) { timer in
                guard calls.increment() == 1 else { return }
                // Still due by its date: the nested run must not fire it.
                inner.value = RunLoop.current.run(mode: .default, seconds: 0)
            }
            loop.add(timer, forMode: .default)
            clock.advance(by: .seconds(1))
            loop.run(mode: .default, seconds: 0)
            timer.invalidate()
            return inner.value ?? .finished
        }.join()
        #expect(calls.value == 1)
        #expect(nested == .timedOut)
    }
}
