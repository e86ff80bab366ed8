public import RunLoopKitCore

/// A manual clock for testing timer logic without sleeping (S-TMR-7), as
/// SwiftNIO's `NIOAsyncTestingEventLoop` and swift-clocks' `TestClock` do.
///
/// A loop made with a test clock fires its timers only when their dates
/// have come on the clock (when the test advances it, or at once for a date
/// already past), in fire-date order, with the other timer rules unchanged:
/// never early, no burst of missed fires. Tolerance changes nothing there:
/// an advance fires everything it made due. Its run deadlines and
/// `perform(afterDelay:)` follow the clock too, so a run never sleeps for
/// them: with nothing ready it waits for input, a wake-up or an advance
/// (which wakes every loop on the clock), and it returns `.timedOut` once
/// its deadline has passed on the test clock. Send and request deadlines
/// and the lag monitor stay on the real clock: they bound waits on other
/// threads and processes.
///
/// The clock starts at the real date when it is made and moves only when
/// advanced. Its dates resolve to the microsecond: a `Date` (a Double of
/// seconds) cannot hold nanoseconds today, so `clock.now + 0.25` and
/// `advance(by: .milliseconds(250))` land on the same instant. Choose it
/// where the loop is made: `LoopThread(name:clock:)`, or
/// `RunLoop.current.use(_:)` on a thread of your own before anything is
/// scheduled on its loop. `RunLoop.main` always uses the real clock, so a
/// test clock is never given to the main thread's loop.
///
/// ```swift
/// import Dispatch
/// import RunLoopKit
/// import RunLoopKitTesting
///
/// let clock = TestClock()
/// let thread = LoopThread(name: "timers", clock: clock)
/// try thread.start()
/// let fired = DispatchSemaphore(value: 0)
/// try thread.performAndWait {
///     _ = try RunLoop.current.scheduledTimer(withTimeInterval: 60, repeats: false) { _ in fired.signal() }
/// }
/// clock.advance(by: .seconds(60))   // wakes "timers": its timer fires now
/// fired.wait()                      // returns at once, not a minute later
/// thread.stop()
/// ```
///
/// Threading: every member may be used from any thread. One clock may
/// drive several loops.
public final class TestClock: Sendable {
    /// The core's manual clock that loops measure on.
    package let manual: ManualClock

    /// A clock that reads the real date now, and stays there until advanced.
    public init() {
        manual = ManualClock()
        manual.setOwner(self)
    }

    /// The clock's date.
    public var now: Date { manual.now }

    /// Moves the clock forward by `duration` and wakes every loop that uses
    /// it, so that timers now due fire and runs whose deadline passed return.
    /// A negative duration is a programming error: a clock never goes back.
    public func advance(by duration: Duration) { manual.advance(by: duration) }

    /// Moves the clock forward to `date` (nothing happens if it is already
    /// there or later) and wakes every loop that uses it.
    public func advance(to date: Date) { manual.advance(to: date) }
}
