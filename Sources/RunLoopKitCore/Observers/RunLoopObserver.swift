import Synchronization

/// Watches a loop's activities (CFRunLoopObserver): entry, before timers,
/// before sources, before waiting, after waiting and exit (S-OBS-1).
///
/// Observers are told in ascending `order` on the loop's thread, only for the
/// mode being run (S-OBS-2). A non-repeating observer is invalidated after its
/// first call. An observer belongs to at most one loop, in any of its modes.
/// Observers alone do not keep a run going (S-RUN-1).
///
/// ```swift
/// let observer = RunLoopObserver(activities: .allActivities) { _, activity in
///     print("activity:", activity)
/// }
/// RunLoop.current.add(observer, forMode: .default)
/// ```
///
/// Threading: create, add, remove and invalidate from any thread; the handler
/// runs on the loop's thread and may add or remove anything, itself included
/// (S-OBS-3).
public final class RunLoopObserver: @unchecked Sendable {
    /// The activities the observer is told of (S-OBS-1).
    public let activities: RunLoop.Activity
    /// False for an observer that invalidates itself after its first call (S-OBS-2).
    public let repeats: Bool
    /// Observers of one activity are told in ascending order, then in the order they were added.
    public let order: Int
    private let handler: @Sendable (RunLoopObserver, RunLoop.Activity) -> Void
    private let valid = Atomic<Bool>(true)
    let binding = LoopBinding()

    /// An observer, not yet in any loop: add it with `RunLoop.add(_:forMode:)`.
    /// - Parameters:
    ///   - activities: what to be told of.
    ///   - repeats: false to be told once only.
    ///   - order: lower orders are told first.
    ///   - handler: runs on the loop's thread with the observer and the activity;
    ///     it may add or remove anything, itself included (S-OBS-3).
    public init(
        activities: RunLoop.Activity,
        repeats: Bool = true,
        order: Int = 0,
        handler: @escaping @Sendable (RunLoopObserver, RunLoop.Activity) -> Void
    ) {
        self.activities = activities
        self.repeats = repeats
        self.order = order
        self.handler = handler
    }

    /// False after `invalidate()`, after a non-repeating observer's call, or once its loop's thread exited. Any thread.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Removes the observer from its loop; it is never called again. Idempotent.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        binding.loop?.removeFromAllModes(self)
    }

    func call(_ activity: RunLoop.Activity) {
        handler(self, activity)
        if !repeats { invalidate() }
    }

    /// Marks the observer invalid without touching the loop (its loop is
    /// being torn down and already dropped it).
    func detach() {
        valid.store(false, ordering: .releasing)
        binding.clear()
    }
}

extension RunLoopObserver: ListedModeItem {
    typealias JoinError = Never
    static var kindName: String { "RunLoopObserver" }
    static var list: WritableKeyPath<ModeState, [RunLoopObserver]> { \.observers }
    var sortOrder: Int? { order }
    func bind(to loop: RunLoop) -> Bool { binding.bind(to: loop) }
    func unbind() { binding.clear() }
    func loopDidTearDown(_ loop: RunLoop, mode: RunLoop.Mode) { detach() }
}
