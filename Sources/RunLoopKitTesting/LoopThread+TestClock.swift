public import RunLoopKitCore

/// Loop threads whose loops run on a test clock.
extension LoopThread {
    /// A thread whose loop measures its timers, `perform(afterDelay:)` and
    /// run deadlines on `clock`, a manual clock that tests advance (S-TMR-7).
    public convenience init(name: String, clock: TestClock) {
        self.init(name: name, loopClock: .manual(clock.manual))
    }
}
