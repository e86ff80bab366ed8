/// What one loop measures its timers and run deadlines on (S-TMR-7): the
/// real clock (CLOCK_MONOTONIC), or a manual clock (RunLoopKitTesting's
/// `TestClock`) that moves only when a
/// test advances it. Instants are nanoseconds in the clock's own domain;
/// `MonotonicClock.never` is "never" on both.
package enum LoopClock: Sendable {
    case real
    case manual(ManualClock)

    @inline(__always)
    func now() -> UInt64 {
        switch self {
        case .real: MonotonicClock.now()
        case let .manual(clock): clock.nowInstant
        }
    }

    /// Whether the timerfd can stand for this clock: only the real clock's
    /// instants come by themselves; a test clock's come with an advance,
    /// which wakes the loop.
    var isReal: Bool {
        if case .real = self { return true }
        return false
    }

    /// The instant `seconds` from now on this clock, saturating.
    func instant(secondsFromNow seconds: Double) -> UInt64 {
        MonotonicClock.instant(seconds: seconds, after: now())
    }

    /// The instant of the date `date` on this clock.
    func instant(for date: Date) -> UInt64 {
        switch self {
        case .real: MonotonicClock.instant(for: date)
        case let .manual(clock): clock.instant(for: date)
        }
    }

    /// The date now on this clock.
    var date: Date {
        switch self {
        case .real: Date()
        case let .manual(clock): clock.now
        }
    }
}
