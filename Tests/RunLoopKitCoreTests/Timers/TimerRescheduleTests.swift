// Moving a timer's fire date: S-TMR-5. On the real clock, because real time
// is what they test: the loop re-arms its timerfd when fireDate moves while
// it sleeps. (Moves among thousands of timers on a test clock are
// TimerAtScaleTests'; in the heap itself, TimerHeapTests'.)
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Moving a timer (S-TMR-5)", .blocksThreads)
struct TimerRescheduleTests {
    private static let ms = nanosecondsPerMillisecond

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

    /// A change made on the loop's own thread wakes nothing: the loop must
    /// see it before it sleeps again, although what it read from its heap
    /// (a far timer) is what it keeps between passes.
    enum OwnThreadChange: CaseIterable, Sendable {
        case timerAdded, fireDateMovedEarlier
    }

    @Test("S-TMR-5: with a far timer scheduled, a timer added or a fire date moved earlier by a block on the loop's own thread, after the loop slept once, fires at its date, not the far one's", arguments: OwnThreadChange.allCases)
    func changeOnOwnThreadBeforeFarTimer(_ change: OwnThreadChange) throws {
        let asleep = DispatchSemaphore(value: 0)
        let loopBox = Locked<RunLoop?>(nil)
        let timers = Locked<[Timer]>([])
        let changedAt = Locked<UInt64>(0)
        let firedAt = Locked<UInt64>(0)
        // Whichever timer fires first records when, and ends the run's timers.
        let record: @Sendable (Timer) -> Void = { _ in
            firedAt.value = monotonicNow()
            for timer in timers.value { timer.invalidate() }
        }
        let loopThread = SpawnedThread<RunLoop.RunResult>(named: "tmr-own-thread") {
            let loop = RunLoop.current
            loopBox.value = loop
            let far = try Timer(timeInterval: 60, repeats: false, block: record)
            timers.value = [far]
            loop.add(far, forMode: .default)
            signalBeforeWaiting(asleep, on: loop)
            return loop.run(mode: .default, seconds: 20)
        }
        #expect(waitFor(asleep))
        let loop = try #require(loopBox.value)
        let far = try #require(timers.value.first)
        loop.perform {
            changedAt.value = monotonicNow()
            switch change {
            case .timerAdded:
                guard let near = try? Timer(timeInterval: 0.05, repeats: false, block: record) else { return }
                timers.value.append(near)
                RunLoop.current.add(near, forMode: .default)
            case .fireDateMovedEarlier:
                far.fireDate = Date(timeIntervalSinceNow: 0.05)
            }
        }
        let result = try loopThread.join()
        #expect(result == .finished, "the run reached its deadline: the change was not seen (\(change))")
        #expect(firedAt.value >= changedAt.value + 49 * Self.ms)
        #expect(firedAt.value < changedAt.value + 10_000 * Self.ms)
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
}
