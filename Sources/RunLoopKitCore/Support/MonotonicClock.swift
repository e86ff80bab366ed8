internal import CLinuxSupport

/// Time on CLOCK_MONOTONIC, in nanoseconds: what timers, deadlines and the
/// timerfd run on, so that a change of the wall clock never fires a timer
/// early or holds it back. The public API speaks `Date` and `TimeInterval`,
/// as Foundation does, and converts at the edge.
///
/// `package`: the ports measure their deadlines on it; `now()` is inlinable
/// because sends read it.
package enum MonotonicClock {
    /// A deadline that never comes.
    @inlinable package static var never: UInt64 { .max }

    @inlinable @inline(__always)
    package static func now() -> UInt64 { rlk_monotonic_nanoseconds() }

    /// The monotonic instant `seconds` from now, saturating at `never`.
    /// `seconds` must not be NaN (callers validate).
    package static func instant(secondsFromNow seconds: Double) -> UInt64 {
        instant(seconds: seconds, after: now())
    }

    package static func instant(seconds: Double, after base: UInt64) -> UInt64 {
        if seconds <= 0 { return seconds == 0 ? base : base &- min(base, nanoseconds(-seconds)) }
        let delta = nanoseconds(seconds)
        return delta >= never - base ? never : base + delta
    }

    /// The monotonic instant that corresponds to the wall-clock `date`.
    package static func instant(for date: Date) -> UInt64 {
        instant(seconds: date.timeIntervalSinceNow, after: now())
    }

    /// The wall-clock date of the monotonic `instant`.
    package static func date(for instant: UInt64) -> Date {
        if instant == never { return .distantFuture }
        let current = now()
        if instant >= current { return Date(timeIntervalSinceNow: seconds(instant - current)) }
        return Date(timeIntervalSinceNow: -seconds(current - instant))
    }

    /// The monotonic instant `duration` from now, saturating at `never`.
    /// A negative duration is rejected with `reason` naming the parameter.
    package static func instant(after duration: Duration, _ what: String) throws(RunLoopError) -> UInt64 {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        try RunLoopError.validate(seconds, what)
        return instant(secondsFromNow: seconds)
    }

    /// Whole nanoseconds in a non-negative interval, saturating.
    package static func nanoseconds(_ seconds: Double) -> UInt64 {
        let ns = seconds * 1e9
        return ns >= Double(UInt64.max) ? .max : UInt64(ns.rounded())
    }

    package static func seconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e9 }
}
