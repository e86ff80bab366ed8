/// What a run last read from its mode's timer heap, and at which count of
/// its loop's timer changes (`RunLoop.timerChanges`). While the count has
/// not moved the heap would say the same, so a pass reads these instead
/// of taking the loop's lock: a loop whose timer is far off (a watchdog, a
/// keep-alive timeout) pays nothing for it in a busy pass
/// (docs/performance.md, "Timers"). Loop thread only, in its snapshot.
struct CachedTimerSchedule {
    /// No timer of the mode fires before this: the heap's top entry, a
    /// bound (an entry may be older than its timer's instant, never newer).
    private var earliest: UInt64 = 0
    private var earliestReadAt: UInt64 = .max
    /// When the loop must wake for the mode's timers (`TimerHeap.wakeInstant`).
    private var wake: UInt64 = 0
    private var wakeReadAt: UInt64 = .max

    /// The bound read when the count of changes was `changes`, or nil.
    func earliest(ifReadAt changes: UInt64) -> UInt64? { earliestReadAt == changes ? earliest : nil }

    /// The wake-up instant read when the count of changes was `changes`, or nil.
    func wake(ifReadAt changes: UInt64) -> UInt64? { wakeReadAt == changes ? wake : nil }

    /// Keeps the bound the heap gave, under the loop's lock, at `changes`.
    mutating func keep(earliest instant: UInt64, readAt changes: UInt64) {
        earliest = instant
        earliestReadAt = changes
    }

    /// Keeps the wake-up instant the heap gave, under the loop's lock, at `changes`.
    mutating func keep(wake instant: UInt64, readAt changes: UInt64) {
        wake = instant
        wakeReadAt = changes
    }
}
