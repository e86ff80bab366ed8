public import RunLoopKitCore

extension TestClock {
    /// Moves this clock forward by `step` each time `loop` is about to sleep
    /// in `mode` (S-RUN-2 step 7), so that a run on a test clock makes
    /// progress by itself: every time nothing is ready, the next `step` of
    /// time passes at once. The advance wakes the loop, which then fires
    /// whatever came due (S-TMR-7), as a loop on the real clock would after
    /// sleeping that long. A loop kept busy (a handled source, a block) does
    /// not sleep, so its time passes only as its callouts advance the clock.
    /// For a test that runs the loop on its own thread and wants its timers
    /// to fire in order without a second thread advancing the clock.
    ///
    /// It is an observer of `.beforeWaiting`, added to `mode` of `loop`;
    /// invalidate the observer it returns to stop advancing (an observer
    /// alone does not keep a mode alive, S-RUN-1). The loop must
    /// use this clock (`RunLoop.use(_:)` or `LoopThread(name:clock:)`).
    ///
    /// ```swift
    /// let clock = TestClock()
    /// let loop = RunLoop.current          // on a thread of your own, not the main thread
    /// loop.use(clock)
    /// let timer = try loop.scheduledTimer(withTimeInterval: 0.1, repeats: true) { _ in print("tick") }
    /// let driver = clock.advanceWhenIdle(loop, by: .milliseconds(100))
    /// loop.run(until: clock.now + 1)      // ten ticks, at once in real time
    /// driver.invalidate(); timer.invalidate()
    /// ```
    ///
    /// - Parameters:
    ///   - loop: the loop whose idle moments move the clock.
    ///   - step: how far each idle moment moves it; more than zero.
    ///   - mode: the mode in which to watch for idle moments.
    /// - Returns: the observer, to invalidate when done.
    @discardableResult
    public func advanceWhenIdle(_ loop: RunLoop, by step: Duration, mode: RunLoop.Mode = .default) -> RunLoopObserver {
        precondition(step > .zero, "TestClock.advanceWhenIdle(_:by:mode:): a step of \(step) never moves the clock; pass a positive duration.")
        precondition(loop.testClock === self, "TestClock.advanceWhenIdle(_:by:mode:): the loop does not use this clock; call loop.use(clock) first, or make the LoopThread with this clock.")
        let observer = RunLoopObserver(activities: .beforeWaiting) { [self] _, _ in advance(by: step) }
        loop.add(observer, forMode: mode)
        return observer
    }
}
