import Synchronization

/// A timer that fires on a run loop (NSTimer / CFRunLoopTimer).
///
/// A timer belongs to at most one loop, in any number of its modes, and fires
/// only while that loop runs in one of them (S-TMR-1, S-TMR-2). It is never
/// early. When it is late (the loop was busy, or in another mode) it fires
/// once, and a repeating timer's next fire date is the next multiple of its
/// interval after now, counted from its original schedule: missed fires are
/// skipped, never delivered in a burst. `tolerance` lets the loop delay a fire
/// by up to that much to serve several timers in one wake-up (S-TMR-3).
///
/// ```swift
/// let timer = try Timer(timeInterval: 0.5, repeats: true) { timer in
///     print("tick at", timer.fireDate)
/// }
/// RunLoop.current.add(timer, forMode: .common)
/// ```
///
/// Threading: every property and method may be used from any thread; the
/// block runs on the loop's thread. Moving `fireDate` re-arms a sleeping loop
/// at once (S-TMR-5).
public final class Timer: @unchecked Sendable {
    /// The repeat interval; 0 for a one-shot timer.
    public let timeInterval: TimeInterval
    public let repeats: Bool
    private let block: @Sendable (Timer) -> Void

    /// The next fire instant on CLOCK_MONOTONIC, in nanoseconds.
    private let fireInstant: Atomic<UInt64>
    private let toleranceNanoseconds = Atomic<UInt64>(0)
    private let valid = Atomic<Bool>(true)
    let binding = LoopBinding()

    /// A timer that first fires `timeInterval` seconds from now.
    ///
    /// - Throws: `RunLoopError.invalidInterval` if the interval is negative,
    ///   NaN or infinite, or zero for a repeating timer.
    public convenience init(
        timeInterval: TimeInterval, repeats: Bool, block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        try RunLoopError.validate(timeInterval, "timer interval")
        try self.init(
            firstFire: MonotonicClock.instant(secondsFromNow: timeInterval),
            interval: timeInterval, repeats: repeats, block: block)
    }

    /// A timer that first fires at `date`, then every `interval` seconds if it repeats.
    ///
    /// - Throws: `RunLoopError.invalidInterval` if `interval` is negative, NaN
    ///   or infinite, or zero for a repeating timer.
    public convenience init(
        fire date: Date, interval: TimeInterval, repeats: Bool, block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        try RunLoopError.validate(interval, "timer interval")
        try self.init(firstFire: MonotonicClock.instant(for: date), interval: interval, repeats: repeats, block: block)
    }

    private init(
        firstFire: UInt64, interval: TimeInterval, repeats: Bool, block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        if repeats && interval == 0 {
            throw .invalidInterval(interval, reason: "a repeating timer needs an interval above zero")
        }
        self.timeInterval = repeats ? interval : 0
        self.repeats = repeats
        self.block = block
        self.fireInstant = Atomic(firstFire)
    }

    /// Creates a timer and adds it to the current thread's loop in the default mode.
    @discardableResult
    public static func scheduledTimer(
        withTimeInterval interval: TimeInterval, repeats: Bool, block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) -> Timer {
        let timer = try Timer(timeInterval: interval, repeats: repeats, block: block)
        try RunLoop.forCurrentThread().add(timer, forMode: .default)
        return timer
    }

    /// When the timer fires next. Setting it from any thread reschedules the
    /// timer and wakes its loop.
    public var fireDate: Date {
        get { MonotonicClock.date(for: fireInstant.load(ordering: .acquiring)) }
        set {
            fireInstant.store(MonotonicClock.instant(for: newValue), ordering: .releasing)
            binding.loop?.timerDidChange()
        }
    }

    /// How late the loop may fire this timer to coalesce wake-ups. Negative
    /// or NaN values count as zero, as Foundation's do.
    public var tolerance: TimeInterval {
        get { MonotonicClock.seconds(toleranceNanoseconds.load(ordering: .relaxed)) }
        set {
            let clean = newValue.isNaN || newValue < 0 ? 0 : newValue
            toleranceNanoseconds.store(MonotonicClock.nanoseconds(clean), ordering: .relaxed)
            binding.loop?.timerDidChange()
        }
    }

    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Stops the timer and removes it from its loop, from any thread (S-TMR-4). Idempotent.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        binding.loop?.removeFromAllModes(self)
    }

    /// Runs the block now, on the calling thread, without changing the
    /// schedule (NSTimer's `fire`). A one-shot timer is invalidated, as
    /// Foundation does.
    public func fire() {
        guard isValid else { return }
        block(self)
        if !repeats { invalidate() }
    }

    // MARK: - Used by RunLoop (on its thread)

    var nextFireInstant: UInt64 { fireInstant.load(ordering: .acquiring) }

    /// The latest instant the loop may wake for this timer.
    var latestWakeInstant: UInt64 {
        let fire = nextFireInstant
        let tolerance = toleranceNanoseconds.load(ordering: .relaxed)
        return tolerance >= MonotonicClock.never - fire ? MonotonicClock.never : fire + tolerance
    }

    /// Fires a due timer on its loop's thread: moves a repeating timer to the
    /// next multiple of its interval after `now` (skipping missed fires), runs
    /// the block, and invalidates a one-shot timer.
    /// Returns false, firing nothing, if the timer is not due (another thread
    /// moved its fire date since the loop looked).
    func fireOnLoop(now: UInt64) -> Bool {
        let scheduled = nextFireInstant
        guard isValid, scheduled <= now else { return false }
        if repeats {
            let interval = MonotonicClock.nanoseconds(timeInterval)
            let missed = (now - scheduled) / interval
            let next = scheduled.addingReportingOverflow((missed + 1).multipliedReportingOverflow(by: interval).partialValue)
            // Set before the block runs, so that a block that moves fireDate wins.
            fireInstant.store(next.overflow ? MonotonicClock.never : next.partialValue, ordering: .releasing)
        } else {
            fireInstant.store(MonotonicClock.never, ordering: .releasing)
        }
        block(self)
        if !repeats { invalidate() }
        return true
    }

    /// Marks the timer invalid without touching the loop (the loop is being
    /// torn down and already dropped it).
    func detach() {
        valid.store(false, ordering: .releasing)
        binding.clear()
    }
}
