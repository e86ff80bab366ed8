import Synchronization

/// A manual clock for testing timer logic without sleeping (S-TMR-7), as
/// SwiftNIO's `NIOAsyncTestingEventLoop` and swift-clocks' `TestClock` do.
///
/// A loop made with a test clock fires its timers only when their dates
/// have come on the clock (when the test advances it, or at once for a date
/// already past), in fire-date order, with the other timer rules unchanged:
/// never early, no burst of missed fires. Tolerance changes nothing there:
/// an advance fires everything it made due. Its run
/// deadlines and `perform(afterDelay:)` follow the clock too, so a run
/// never sleeps for them: with nothing ready it waits for input, a
/// wake-up or an advance (which wakes every loop on the clock), and it
/// returns `.timedOut` once its deadline has passed on the test clock.
/// Send and request deadlines and the lag monitor stay on the real clock:
/// they bound waits on other threads and processes.
///
/// The clock starts at the real date when it is made and moves only when
/// advanced. Its dates resolve to the microsecond: a `Date` (a Double of
/// seconds) cannot hold nanoseconds today, so `clock.now + 0.25` and
/// `advance(by: .milliseconds(250))` land on the same instant. Choose it where the loop is made: `LoopThread(name:clock:)`,
/// or `RunLoop.current.use(_:)` on a thread before anything is scheduled
/// on its loop. `RunLoop.main` always uses the real clock.
///
/// ```swift
/// let clock = TestClock()
/// let loop = RunLoop.current
/// loop.use(clock)
/// let timer = try loop.scheduledTimer(withTimeInterval: 60, repeats: false) { _ in print("a minute later") }
/// clock.advance(by: .seconds(60))
/// loop.run(mode: .default, seconds: 0)   // fires now, without waiting a minute
/// ```
///
/// Threading: every member may be used from any thread. One clock may
/// drive several loops.
public final class TestClock: Sendable {
    /// The real date and monotonic instant when the clock was made: the
    /// test clock's dates are counted from there.
    private let originDate: Date
    private let originInstant: UInt64
    private let current: Atomic<UInt64>
    /// The loops to wake on an advance; weak, so the clock keeps no loop alive.
    private let loops = Locked<[WeakLoop]>([])

    /// A clock that reads the real date now, and stays there until advanced.
    public init() {
        originDate = Date()
        originInstant = MonotonicClock.now()
        current = Atomic(originInstant)
    }

    /// The clock's date.
    public var now: Date { date(for: nowInstant) }

    /// Moves the clock forward by `duration` and wakes every loop that uses
    /// it, so that timers now due fire and runs whose deadline passed return.
    /// A negative duration is a programming error: a clock never goes back.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "TestClock.advance(by: \(duration)): a clock only moves forward; pass a duration of zero or more.")
        let (seconds, attoseconds) = duration.components
        let nanoseconds = UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
        current.wrappingAdd(nanoseconds, ordering: .acquiringAndReleasing)
        wakeLoops()
    }

    /// Moves the clock forward to `date` (nothing happens if it is already
    /// there or later) and wakes every loop that uses it.
    public func advance(to date: Date) {
        let target = instant(for: date)
        var now = current.load(ordering: .acquiring)
        while target > now {
            let (exchanged, original) = current.compareExchange(expected: now, desired: target, ordering: .acquiringAndReleasing)
            if exchanged { break }
            now = original
        }
        wakeLoops()
    }

    // MARK: - Used by loops

    var nowInstant: UInt64 { current.load(ordering: .acquiring) }

    func instant(for date: Date) -> UInt64 {
        if date == .distantFuture { return MonotonicClock.never }
        // To the microsecond (see above): exact for every date this clock
        // hands out, and for dates a whole number of microseconds from them.
        let microseconds = (date.timeIntervalSince(originDate) * 1e6).rounded()
        return MonotonicClock.instant(seconds: microseconds / 1e6, after: originInstant)
    }

    func date(for instant: UInt64) -> Date {
        if instant == MonotonicClock.never { return .distantFuture }
        if instant >= originInstant { return originDate + MonotonicClock.seconds(instant - originInstant) }
        return originDate - MonotonicClock.seconds(originInstant - instant)
    }

    func attach(_ loop: RunLoop) {
        loops.withLock { loops in
            loops.removeAll { $0.loop == nil }
            if !loops.contains(where: { $0.loop === loop }) { loops.append(WeakLoop(loop)) }
        }
    }

    private func wakeLoops() {
        for loop in loops.withLock({ $0.compactMap(\.loop) }) { loop.wakeUp() }
    }
}
