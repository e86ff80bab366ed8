import Synchronization

/// The machinery of a manual clock (S-TMR-7): an instant that moves only
/// when advanced, the dates it maps to, and the loops to wake when it
/// moves. Users reach it through RunLoopKitTesting's `TestClock`, which
/// owns one; the core keeps it `package` so that the product's own API
/// names no test type (docs/design.md, "Modules").
///
/// Threading: every member may be used from any thread.
package final class ManualClock: Sendable {
    /// The real date and monotonic instant when the clock was made: the
    /// clock's dates are counted from there.
    private let originDate: Date
    private let originInstant: UInt64
    private let current: Atomic<UInt64>
    /// The loops to wake on an advance; weak, so the clock keeps no loop alive.
    private let loops = Locked<[WeakLoop]>([])
    /// The public face that owns this clock (a `TestClock`), weak so that
    /// the two do not keep each other; a loop hands it back from `testClock`.
    private let owner = Locked<WeakOwner>(WeakOwner())

    /// A clock that reads the real date now, and stays there until advanced.
    package init() {
        originDate = Date()
        originInstant = MonotonicClock.now()
        current = Atomic(originInstant)
    }

    /// The object that owns this clock, as set by `setOwner`.
    package var ownerObject: AnyObject? { owner.withLock { $0.object } }

    /// Records the public face that owns this clock.
    package func setOwner(_ object: AnyObject) { owner.withLock { $0.object = object } }

    /// The clock's date.
    package var now: Date { date(for: nowInstant) }

    package var nowInstant: UInt64 { current.load(ordering: .acquiring) }

    /// Moves the clock forward by `duration` and wakes every loop on it.
    /// A negative duration is a programming error: a clock never goes back.
    package func advance(by duration: Duration) {
        precondition(duration >= .zero, "TestClock.advance(by: \(duration)): a clock only moves forward; pass a duration of zero or more.")
        let (seconds, attoseconds) = duration.components
        let nanoseconds = UInt64(seconds) &* 1_000_000_000 &+ UInt64(attoseconds / 1_000_000_000)
        current.wrappingAdd(nanoseconds, ordering: .acquiringAndReleasing)
        wakeLoops()
    }

    /// Moves the clock forward to `date` (nothing happens if it is already
    /// there or later) and wakes every loop on it.
    package func advance(to date: Date) {
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

    package func instant(for date: Date) -> UInt64 {
        if date == .distantFuture { return MonotonicClock.never }
        // To the microsecond (TestClock's documentation says why): exact for
        // every date this clock hands out, and for dates a whole number of
        // microseconds from them.
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

/// A weak reference to a manual clock's owner, kept behind the clock's lock.
private struct WeakOwner {
    weak var object: AnyObject?
}
