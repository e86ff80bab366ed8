import Glibc
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
    // @unchecked Sendable: every mutable property is atomic, behind a bit
    // of `state` (the loop it is bound to, the block) or (`heapPlaces`)
    // behind the lock of the loop it is bound to; the block is @Sendable.

    // Stored in this order, in 96 bytes, for the cache lines a change
    // reaches in a timer untouched for a while among many: a move of the
    // fire date reads the first 48 bytes, a sift `heapPlaces` alone
    // (docs/performance.md, "Timers").

    /// Whether it is valid (`validBit`), whether its block is running on
    /// the loop (`firingBit`: a nested run inside it, S-RUN-8, must not
    /// fire it again, and the fire date stays the date being fired until
    /// the block returns, S-TMR-6), the locks of `heldBlock`
    /// (`blockLockBit`) and of `boundLoop` (`bindingLockBit`), and its
    /// tolerance in nanoseconds (the rest), in one word.
    private let state = Atomic<UInt64>(Timer.validBit)
    /// The loop it belongs to (S-TMR-1: at most one), weak so that a timer
    /// never keeps its loop alive. Behind `bindingLockBit` (`holding`),
    /// because `invalidate()` and `fireDate`'s setter read it on any thread
    /// while the loop binds or lets go of the timer: a bit rather than the
    /// `Mutex` of the other items' `LoopBinding`, whose lock word and
    /// padding would make every timer larger.
    // U-TIMER-BINDING (docs/unsafe-sites.md).
    @exclusivity(unchecked) private weak var boundLoop: RunLoop?
    /// The fire date as an instant on the clock of the timer's loop (the
    /// real clock until it joins one): what the loop sorts and waits on.
    private let fireInstant: Atomic<UInt64>
    /// The fire date exactly as set or computed (S-TMR-6), as the bit
    /// pattern of its `timeIntervalSinceReferenceDate`.
    private let fireDateBits: Atomic<UInt64>
    /// Its place in each heap of its loop's modes (`TimerHeap`), changed
    /// under that loop's lock only. Unchecked exclusivity: the lock already
    /// serialises every access, and a heap reads it at every change and
    /// writes it at every swap of a sift.
    // U-TIMER-HEAP-PLACES (docs/unsafe-sites.md).
    @exclusivity(unchecked) var heapPlaces = TimerHeapPlaces()
    /// The repeat interval, `userInfo` and `origin`, out of line for the
    /// timers that have any: a one-shot timer made without `userInfo`, the
    /// kind a program makes by the thousand, has none.
    private let extras: TimerExtras?
    /// The block, until the timer is invalidated: as NSTimer lets go of its
    /// target at `invalidate()`, so that a block that captures the timer's
    /// owner (which holds the timer) keeps nothing alive once the timer is
    /// done. Behind `blockLockBit` (`holding`), because `invalidate()` may
    /// run on any thread while the loop fires the timer: a fire takes its
    /// own reference first. A bit of `state` rather than a `Mutex`, which
    /// would make a timer larger and every invalidation dearer
    /// (docs/performance.md, "Tried and not kept").
    // U-TIMER-BLOCK (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var heldBlock: (@Sendable (Timer) -> Void)?

    private static let validBit: UInt64 = 1 << 63
    private static let firingBit: UInt64 = 1 << 62
    private static let blockLockBit: UInt64 = 1 << 61
    private static let bindingLockBit: UInt64 = 1 << 60
    /// The tolerance's bits of `state`: up to 2⁶⁰ - 1 ns, about 36 years.
    private static let toleranceMask: UInt64 = (1 << 60) - 1

    /// Whether the timer fires again every `timeInterval` seconds.
    public var repeats: Bool { timeInterval > 0 }
    /// The repeat interval; 0 for a one-shot timer.
    public var timeInterval: TimeInterval { extras?.interval ?? 0 }
    /// What the timer was made with to carry to its block (NSTimer's
    /// `userInfo`): read it as `timer.userInfo` inside the block; nil if none
    /// was given. Set once, when the timer is made, and let go of (nil) when
    /// it is invalidated, as NSTimer does.
    public var userInfo: (any Sendable)? { extras?.userInfo }
    /// For a timer made by `perform(afterDelay:)`: the tag and call site
    /// that the monitor's `CalloutReport.origin` names; nil for every other timer.
    var origin: BlockOrigin? { extras?.origin }

    /// A timer that first fires `timeInterval` seconds from now on the real
    /// clock (as Foundation's does; on a loop with a `TestClock`, use
    /// `RunLoop.scheduledTimer` or an explicit date instead).
    ///
    /// - Throws: `RunLoopError.invalidInterval` if the interval is negative,
    ///   NaN or infinite, or zero for a repeating timer.
    public convenience init(
        timeInterval: TimeInterval, repeats: Bool, block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        try self.init(
            timeInterval: timeInterval, repeats: repeats, on: .real,
            extras: TimerExtras.of(interval: repeats ? timeInterval : 0), block: block)
    }

    /// A timer that first fires `timeInterval` seconds from now on the real
    /// clock and carries `userInfo` to its block (NSTimer's `userInfo`).
    ///
    /// A separate initialiser, with `userInfo` required, rather than a
    /// defaulted argument of the one above: beside `import Foundation`, a
    /// defaulted argument would let `Timer(timeInterval:repeats:block:)`
    /// quietly resolve to Foundation's timer instead of failing as ambiguous.
    ///
    /// - Parameters:
    ///   - timeInterval: seconds until the first fire, and between fires if
    ///     it repeats.
    ///   - userInfo: anything the block should find in `timer.userInfo`.
    ///   - repeats: whether it fires again every `timeInterval` seconds.
    ///   - block: run on the loop's thread at each fire, given the timer.
    /// - Throws: `RunLoopError.invalidInterval`, as the initialiser above.
    public convenience init(
        timeInterval: TimeInterval, userInfo: (any Sendable)?, repeats: Bool,
        block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        try self.init(timeInterval: timeInterval, repeats: repeats, on: .real, userInfo: userInfo, block: block)
    }

    /// A timer that first fires at `date` exactly, then every `interval`
    /// seconds if it repeats.
    ///
    /// - Throws: `RunLoopError.invalidInterval` if `interval` is negative, NaN
    ///   or infinite, or zero for a repeating timer.
    public convenience init(
        fire date: Date, interval: TimeInterval, repeats: Bool, block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        try RunLoopError.validate(interval, "timer interval")
        try self.init(
            firstFire: date, instant: MonotonicClock.instant(for: date), interval: interval, repeats: repeats,
            extras: TimerExtras.of(interval: repeats ? interval : 0), block: block)
    }

    /// A timer that first fires at `date` exactly, then every `interval`
    /// seconds if it repeats, and carries `userInfo` to its block.
    ///
    /// - Throws: `RunLoopError.invalidInterval` if `interval` is negative, NaN
    ///   or infinite, or zero for a repeating timer.
    ///
    /// - Parameters:
    ///   - date: the first fire date.
    ///   - interval: seconds between fires if it repeats.
    ///   - userInfo: anything the block should find in `timer.userInfo`
    ///     (required, for the reason given at
    ///     `init(timeInterval:userInfo:repeats:block:)`).
    ///   - repeats: whether it fires again every `interval` seconds.
    ///   - block: run on the loop's thread at each fire, given the timer.
    public convenience init(
        fire date: Date, interval: TimeInterval, userInfo: (any Sendable)?, repeats: Bool,
        block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        try RunLoopError.validate(interval, "timer interval")
        try self.init(
            firstFire: date, instant: MonotonicClock.instant(for: date), interval: interval, repeats: repeats,
            extras: TimerExtras.of(interval: repeats ? interval : 0, userInfo: userInfo, origin: nil), block: block)
    }

    /// A timer that first fires `timeInterval` seconds from now on `clock`;
    /// `origin` for a delayed perform's.
    convenience init(
        timeInterval: TimeInterval, repeats: Bool, on clock: LoopClock, origin: BlockOrigin? = nil,
        userInfo: (any Sendable)? = nil, block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        try self.init(
            timeInterval: timeInterval, repeats: repeats, on: clock,
            extras: TimerExtras.of(interval: repeats ? timeInterval : 0, userInfo: userInfo, origin: origin), block: block)
    }

    /// A timer that first fires `timeInterval` seconds from now on `clock`,
    /// carrying `extras`.
    private convenience init(
        timeInterval: TimeInterval, repeats: Bool, on clock: LoopClock, extras: TimerExtras?,
        block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        try RunLoopError.validate(timeInterval, "timer interval")
        try self.init(
            firstFire: clock.date + timeInterval, instant: clock.instant(secondsFromNow: timeInterval),
            interval: timeInterval, repeats: repeats, extras: extras, block: block)
    }

    /// `extras` carries the interval of a repeating timer (a one-shot
    /// timer's reads 0, as NSTimer's does, and `repeats` is whether it is
    /// above zero, which a repeating timer's must be): each initialiser
    /// makes it with `TimerExtras.of`, those without `userInfo` with the
    /// variant that takes none, so that they handle no `(any Sendable)?`,
    /// whose copy and destroy every timer would pay, nil or not.
    private init(
        firstFire date: Date, instant: UInt64, interval: TimeInterval, repeats: Bool, extras: TimerExtras?,
        block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) {
        if repeats && interval == 0 {
            throw .invalidInterval(interval, reason: "a repeating timer needs an interval above zero")
        }
        heldBlock = block
        self.extras = extras
        fireDateBits = Atomic(date.timeIntervalSinceReferenceDate.bitPattern)
        fireInstant = Atomic(instant)
    }

    deinit {
        // A timer in more than two heaps left the rest of its records in a
        // table; normally it left those heaps first, but a torn-down
        // loop's timers keep theirs.
        heapPlaces.forgetSpilled(of: ObjectIdentifier(self))
    }

    /// Creates a timer and adds it to the current thread's loop in the
    /// default mode; its first fire date is on that loop's clock.
    @discardableResult
    public static func scheduledTimer(
        withTimeInterval interval: TimeInterval, repeats: Bool, block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) -> Timer {
        try RunLoop.forCurrentThread().scheduledTimer(withTimeInterval: interval, userInfo: nil, repeats: repeats, block: block)
    }

    /// Creates a timer that carries `userInfo` to its block and adds it to
    /// the current thread's loop in the default mode, as
    /// `scheduledTimer(withTimeInterval:repeats:block:)` does.
    ///
    /// - Parameters:
    ///   - interval: seconds until the first fire, and between fires if it repeats.
    ///   - userInfo: anything the block should find in `timer.userInfo`.
    ///   - repeats: whether it fires again every `interval` seconds.
    ///   - block: run on the loop's thread at each fire, given the timer.
    /// - Throws: `RunLoopError.invalidInterval`, as the one without `userInfo`.
    @discardableResult
    public static func scheduledTimer(
        withTimeInterval interval: TimeInterval, userInfo: (any Sendable)?, repeats: Bool,
        block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) -> Timer {
        try RunLoop.forCurrentThread().scheduledTimer(withTimeInterval: interval, userInfo: userInfo, repeats: repeats, block: block)
    }

    /// When the timer fires next; inside the timer's own block, the date
    /// being fired (S-TMR-6). Reads back exactly the date that was set.
    /// Setting it from any thread reschedules the timer and wakes its loop
    /// (S-TMR-5).
    public var fireDate: Date {
        get { Date(timeIntervalSinceReferenceDate: Double(bitPattern: fireDateBits.load(ordering: .acquiring))) }
        set {
            let loop = self.loop
            fireDateBits.store(newValue.timeIntervalSinceReferenceDate.bitPattern, ordering: .releasing)
            let instant = (loop?.clock ?? .real).instant(for: newValue)
            let previous = fireInstant.exchange(instant, ordering: .acquiringAndReleasing)
            // Moved later, each heap's entry (older now) is moved when it
            // comes to the top (TimerHeap); the loop re-arms either way.
            if instant < previous { loop?.timerDidMove(self) } else { loop?.itemDidChange() }
        }
    }

    /// How late the loop may fire this timer to coalesce wake-ups. Negative
    /// or NaN values count as zero, as Foundation's do.
    public var tolerance: TimeInterval {
        get { MonotonicClock.seconds(state.load(ordering: .relaxed) & Self.toleranceMask) }
        set {
            let clean = newValue.isNaN || newValue < 0 ? 0 : newValue
            let nanoseconds = min(MonotonicClock.nanoseconds(clean), Self.toleranceMask)
            var current = state.load(ordering: .relaxed)
            while true {
                let desired = current & ~Self.toleranceMask | nanoseconds
                let (exchanged, original) = state.compareExchange(expected: current, desired: desired, ordering: .relaxed)
                if exchanged { break }
                current = original
            }
            loop?.itemDidChange()
        }
    }

    /// False after `invalidate()`, and after a one-shot timer fired.
    public var isValid: Bool { state.load(ordering: .acquiring) & Self.validBit != 0 }

    /// Stops the timer and removes it from its loop, from any thread (S-TMR-4). Idempotent.
    public func invalidate() {
        guard state.bitwiseAnd(~Self.validBit, ordering: .acquiringAndReleasing).oldValue & Self.validBit != 0 else { return }
        loop?.removeFromAllModes(self)
        releaseBlockAndUserInfo()
    }

    /// Runs the block now, on the calling thread, without changing the
    /// schedule (NSTimer's `fire`). A one-shot timer is invalidated, as
    /// Foundation does.
    public func fire() {
        guard isValid, let body = currentBlock else { return }
        body(self)
        if !repeats { invalidate() }
    }

    /// The block, nil once the timer was invalidated. A reference of the
    /// caller's own: an invalidation meanwhile does not end it.
    private var currentBlock: (@Sendable (Timer) -> Void)? { withBlock { $0 } }

    /// Lets go of the block (an invalid timer never runs it again) and of
    /// `userInfo`. What they hold is released here, after the locks: its
    /// deinits are user code.
    private func releaseBlockAndUserInfo() {
        let released = withBlock { block in
            defer { block = nil }
            return block
        }
        _ = released
        extras?.releaseUserInfo()
    }

    /// Runs `body` on `heldBlock` with `blockLockBit` held.
    @inline(__always)
    private func withBlock<Result>(_ body: (inout (@Sendable (Timer) -> Void)?) -> Result) -> Result {
        holding(Self.blockLockBit) { body(&heldBlock) }
    }

    /// Runs `body` with `bit` of `state` held: a lock for the length of a
    /// copy or a take of one reference (`heldBlock`, `boundLoop`), so the
    /// holder keeps it for a few instructions; a second thread yields until
    /// then. Nothing else waits on these bits, and every other change of
    /// `state` is an atomic operation that keeps them.
    @inline(__always)
    private func holding<Result>(_ bit: UInt64, _ body: () -> Result) -> Result {
        while state.bitwiseOr(bit, ordering: .acquiring).oldValue & bit != 0 {
            sched_yield()
        }
        defer { state.bitwiseAnd(~bit, ordering: .releasing) }
        return body()
    }

    /// The loop it belongs to, if any: read under `bindingLockBit`.
    var loop: RunLoop? { holding(Self.bindingLockBit) { boundLoop } }

    // MARK: - Used by RunLoop (on its thread)

    var nextFireInstant: UInt64 { fireInstant.load(ordering: .acquiring) }

    /// Whether the loop may fire it: valid, and not in its own block.
    var isSchedulable: Bool { state.load(ordering: .acquiring) & (Self.validBit | Self.firingBit) == Self.validBit }

    /// The latest instant the loop may wake for this timer.
    var latestWakeInstant: UInt64 {
        let fire = nextFireInstant
        let tolerance = state.load(ordering: .relaxed) & Self.toleranceMask
        return tolerance >= MonotonicClock.never - fire ? MonotonicClock.never : fire + tolerance
    }

    /// Joining a loop whose clock is a `TestClock`: the fire date is kept,
    /// and its instant is counted on that clock from now on.
    func measure(on clock: LoopClock) {
        guard !clock.isReal else { return }
        fireInstant.store(clock.instant(for: fireDate), ordering: .releasing)
    }

    /// Fires a due timer on its loop's thread: runs the block with the fire
    /// date still the one being fired (S-TMR-6), then moves a repeating
    /// timer to the next multiple of its interval after `now` (skipping
    /// missed fires, S-TMR-2) unless the block moved it, and invalidates a
    /// one-shot timer. Returns false, firing nothing, if the timer is not
    /// due (another thread moved its fire date since the loop looked) or is
    /// already firing further up the stack.
    func fireOnLoop(now: UInt64) -> Bool {
        let scheduled = nextFireInstant
        guard isValid, scheduled <= now,
              state.bitwiseOr(Self.firingBit, ordering: .acquiringAndReleasing).oldValue & Self.firingBit == 0
        else { return false }
        let firedDate = fireDateBits.load(ordering: .acquiring)
        // Nil only if another thread invalidated the timer since the check.
        currentBlock?(self)
        state.bitwiseAnd(~Self.firingBit, ordering: .releasing)
        let timeInterval = self.timeInterval
        guard timeInterval > 0 else {
            invalidate()
            return true
        }
        let interval = MonotonicClock.nanoseconds(timeInterval)
        let steps = (now - scheduled) / interval + 1
        let step = steps.multipliedReportingOverflow(by: interval)
        let next = scheduled.addingReportingOverflow(step.partialValue)
        let nextInstant = step.overflow || next.overflow ? MonotonicClock.never : next.partialValue
        let nextDate = Double(bitPattern: firedDate) + Double(steps) * timeInterval
        // Only if the block did not move the timer: a new fireDate set
        // there (or meanwhile, from another thread) wins.
        if fireInstant.compareExchange(expected: scheduled, desired: nextInstant, ordering: .acquiringAndReleasing).exchanged {
            _ = fireDateBits.compareExchange(expected: firedDate, desired: nextDate.bitPattern, ordering: .acquiringAndReleasing)
        }
        return true
    }

    /// Marks the timer invalid without touching the loop (the loop is being
    /// torn down and already dropped it), and lets go of its block as
    /// `invalidate()` does. On the loop's thread, with no lock held.
    func detach() {
        state.bitwiseAnd(~Self.validBit, ordering: .releasing)
        unbind()
        releaseBlockAndUserInfo()
    }
}

extension Timer: ModeItem {
    typealias JoinError = Never
    static var kindName: String { "Timer" }
    /// Binds to `loop`; false if the timer already belongs to another
    /// live loop (S-TMR-1).
    func bind(to loop: RunLoop) -> Bool {
        holding(Self.bindingLockBit) {
            if let existing = boundLoop, existing !== loop { return false }
            boundLoop = loop
            return true
        }
    }

    func unbind() { holding(Self.bindingLockBit) { boundLoop = nil } }

    /// Nothing to do for the modes a timer joined or left (CFRunLoopTimer
    /// has no schedule or cancel callouts).
    static var observesModeChanges: Bool { false }
    /// Only the first timer in, or the last out (`ModeItem`).
    static func outdatesSnapshot(of mode: borrowing ModeState) -> Bool { mode.timers.count <= 1 }
    static func insert(_ timer: Timer, into mode: inout ModeState) -> Bool { mode.timers.insert(timer) }
    static func remove(_ timer: Timer, from mode: inout ModeState) -> Bool { mode.timers.remove(timer) }
    static func isHeld(_ timer: Timer, by mode: ModeState) -> Bool { mode.timers.contains(timer) }
    static func all(in mode: ModeState) -> [Timer] { mode.timers.timers }

    func joinedLocked(_ mode: RunLoop.Mode, _ state: inout LoopState, waiter: LoopWaiter) {
        // On a loop with a test clock the instant changes: the heap moves it.
        guard !state.clock.isReal else { return }
        measure(on: state.clock)
        state.withMode(mode) { $0.timers.reschedule(self) }
    }

    func loopDidTearDown(_ loop: RunLoop, mode: RunLoop.Mode) { detach() }
}
