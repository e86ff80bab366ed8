// Invalidating a timer: S-TMR-4. Every loop here runs on a thread made for
// the test, on a TestClock (S-TMR-7) where timing is not the subject:
// invalidation from another thread while asleep or during a fire, one-shot
// self-invalidation, a repeating timer invalidated on its second fire
// ending the run with .finished; and what an invalid timer lets go of (its
// block and userInfo, as NSTimer lets go of its target).
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Invalidating timers (S-TMR-4)", .blocksThreads)
struct TimerInvalidationTests {
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
}
