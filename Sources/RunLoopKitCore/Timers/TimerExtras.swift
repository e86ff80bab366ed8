import Synchronization

/// What some timers carry, out of line (`Timer.extras`): a repeating
/// timer's interval, `userInfo`, a delayed perform's origin.
final class TimerExtras: Sendable {
    let interval: TimeInterval
    /// Until the timer is invalidated, as the block (`Timer.heldBlock`).
    private let heldUserInfo: Mutex<(any Sendable)?>
    /// Whether it was made with a `userInfo`: the repeating timers and
    /// delayed performs without one skip the lock when they are invalidated.
    private let hasUserInfo: Bool
    let origin: BlockOrigin?

    private init(interval: TimeInterval, userInfo: (any Sendable)?, origin: BlockOrigin?) {
        self.interval = interval
        hasUserInfo = userInfo != nil
        heldUserInfo = Mutex(userInfo)
        self.origin = origin
    }

    var userInfo: (any Sendable)? { hasUserInfo ? heldUserInfo.withLock { $0 } : nil }

    /// Lets go of `userInfo`; released after the lock (its deinit is user code).
    func releaseUserInfo() {
        guard hasUserInfo else { return }
        let released = heldUserInfo.withLock { userInfo in
            defer { userInfo = nil }
            return userInfo
        }
        _ = released
    }

    /// What a timer with this repeat interval (0 for a one-shot timer),
    /// `userInfo` and origin carries; nil if nothing.
    static func of(interval: TimeInterval, userInfo: (any Sendable)?, origin: BlockOrigin?) -> TimerExtras? {
        interval == 0 && userInfo == nil && origin == nil ? nil : TimerExtras(interval: interval, userInfo: userInfo, origin: origin)
    }

    /// The same for a timer made without `userInfo`.
    static func of(interval: TimeInterval) -> TimerExtras? {
        interval == 0 ? nil : TimerExtras(interval: interval, userInfo: nil, origin: nil)
    }
}
