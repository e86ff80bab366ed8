public import RunLoopKitCore

/// Giving a thread's own loop a test clock, and finding it again.
extension RunLoop {
    /// Makes this loop measure its timers, `perform(afterDelay:)` and its
    /// run deadlines on `clock`, which moves only when a test advances it
    /// (S-TMR-7). Call it on the loop's own thread, before anything is
    /// scheduled on the loop.
    ///
    /// Misuse traps, since a test that gets it wrong would otherwise
    /// silently wait on the real clock: calling it after an item was added,
    /// on another thread, or on `RunLoop.main` (which always uses the real
    /// clock). A `LoopThread` takes its clock where it is made instead:
    /// `LoopThread(name:clock:)`.
    public func use(_ clock: TestClock) {
        use(manualClock: clock.manual)
    }

    /// The test clock this loop runs on, or nil for the real clock.
    public var testClock: TestClock? {
        manualClock?.ownerObject as? TestClock
    }
}
