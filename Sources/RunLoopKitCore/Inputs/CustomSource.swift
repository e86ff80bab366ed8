import Synchronization

/// A custom input source: CFRunLoopSource version 0 ("Source0").
///
/// It fires only after it has been signalled, and signalling does not wake a
/// sleeping loop by itself (S-SRC0-1): call `wakeUp()` on the loop too, or use
/// `signalAndWakeUp()`, which does both for every loop the source is in.
///
/// ```swift
/// let source = CustomSource(order: 0) { print("performed") }
/// loop.add(source, forMode: .default)
/// // any thread:
/// source.signalAndWakeUp()
/// ```
///
/// Threading: every method may be called from any thread. `perform` runs on
/// the thread of the loop that fires it; `schedule` and `cancel` run on the
/// thread that adds or removes the source (for a loop torn down at thread
/// exit, on that exiting thread). A source may be in several modes of several
/// loops; signalling fires it once in whichever loop reaches it first.
public final class CustomSource: @unchecked Sendable {
    /// Sources of a mode are performed in ascending `order`, then in the
    /// order they were added (S-RUN-2 step 5).
    public let order: Int

    private let scheduleHandler: (@Sendable (RunLoop, RunLoop.Mode) -> Void)?
    private let cancelHandler: (@Sendable (RunLoop, RunLoop.Mode) -> Void)?
    private let performHandler: @Sendable () -> Void

    private let signalled = Atomic<Bool>(false)
    private let valid = Atomic<Bool>(true)
    /// The loops the source is in, for invalidate and signalAndWakeUp.
    private let loops = Locked<[WeakLoop]>([])

    /// - Parameters:
    ///   - order: lower orders are performed first.
    ///   - schedule: called once for each mode the source is added to.
    ///   - cancel: called once for each mode it leaves, including when its loop
    ///     is torn down or the source is invalidated.
    ///   - perform: the work; runs on the loop's thread after a signal.
    public init(
        order: Int = 0,
        schedule: (@Sendable (RunLoop, RunLoop.Mode) -> Void)? = nil,
        cancel: (@Sendable (RunLoop, RunLoop.Mode) -> Void)? = nil,
        perform: @escaping @Sendable () -> Void
    ) {
        self.order = order
        self.scheduleHandler = schedule
        self.cancelHandler = cancel
        self.performHandler = perform
    }

    /// Marks the source ready to fire at the loop's next Source0 step. Several
    /// signals before it fires make one perform (S-SRC0-2). Does not wake the loop.
    public func signal() {
        signalled.store(true, ordering: .releasing)
    }

    /// `signal()` then `wakeUp()` on every loop the source is in: what
    /// CFRunLoopSourceSignal followed by CFRunLoopWakeUp does.
    public func signalAndWakeUp() {
        signal()
        for loop in scheduledLoops() { loop.wakeUp() }
    }

    /// True between a signal and the start of the perform it causes.
    public var isSignalled: Bool { signalled.load(ordering: .acquiring) }

    /// False after `invalidate()`.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Removes the source from every mode of every loop, calling `cancel` for
    /// each; it never fires again (S-SRC0-3). Idempotent.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        for loop in scheduledLoops() { loop.removeFromAllModes(self) }
    }

    // MARK: - Used by RunLoop

    /// Clears the signal just before perform, so that perform may signal again.
    /// Returns whether the source was signalled.
    func takeSignal() -> Bool {
        guard signalled.load(ordering: .relaxed) else { return false }
        return signalled.exchange(false, ordering: .acquiringAndReleasing)
    }

    func perform() { performHandler() }

    func didSchedule(on loop: RunLoop, mode: RunLoop.Mode) {
        loops.withLock { loops in
            if !loops.contains(where: { $0.loop === loop }) { loops.append(WeakLoop(loop)) }
        }
        scheduleHandler?(loop, mode)
    }

    func didCancel(on loop: RunLoop, mode: RunLoop.Mode, leftLoop: Bool) {
        if leftLoop { loops.withLock { $0.removeAll { $0.loop === loop || $0.loop == nil } } }
        cancelHandler?(loop, mode)
    }

    private func scheduledLoops() -> [RunLoop] {
        loops.withLock { $0.compactMap(\.loop) }
    }
}

extension CustomSource: ListedModeItem {
    typealias JoinError = Never
    static var kindName: String { "CustomSource" }
    static var list: WritableKeyPath<ModeState, [CustomSource]> { \.customSources }
    var sortOrder: Int? { order }
    func didJoin(_ loop: RunLoop, mode: RunLoop.Mode) { didSchedule(on: loop, mode: mode) }
    func didLeave(_ loop: RunLoop, mode: RunLoop.Mode, leftLoop: Bool) { didCancel(on: loop, mode: mode, leftLoop: leftLoop) }
    func loopDidTearDown(_ loop: RunLoop, mode: RunLoop.Mode) { didCancel(on: loop, mode: mode, leftLoop: true) }
}
