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
        let (wall, monotonic) = wallAndMonotonic()
        return instant(seconds: date.timeIntervalSinceReferenceDate - wall, after: monotonic)
    }

    /// The wall-clock date of the monotonic `instant`.
    package static func date(for instant: UInt64) -> Date {
        if instant == never { return .distantFuture }
        let (wall, monotonic) = wallAndMonotonic()
        let offset = instant >= monotonic ? seconds(instant - monotonic) : -seconds(monotonic - instant)
        return Date(timeIntervalSinceReferenceDate: wall + offset)
    }

    /// The wall clock (seconds since 2001) and the monotonic instant of one
    /// moment. Read one after the other, the two would be as far apart as
    /// a preemption between the reads (seen here at 0.75 s on a loaded
    /// machine), and a date converted with them off by as much: so the
    /// wall clock is read between two monotonic reads, again (at most four
    /// times in all) while those are more than 50 µs apart, and paired with
    /// their middle.
    static func wallAndMonotonic() -> (wall: Double, monotonic: UInt64) {
        var best = (wall: 0.0, monotonic: UInt64(0), gap: UInt64.max)
        for _ in 0..<4 {
            let before = now()
            let wall = Date().timeIntervalSinceReferenceDate
            let gap = now() &- before
            if gap < best.gap { best = (wall, before &+ gap / 2, gap) }
            if gap <= 50_000 { break }
        }
        return (best.wall, best.monotonic)
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
