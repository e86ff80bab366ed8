@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Series made once per key and kept (a port's counters, a drop reason's
/// counter), up to a limit if there is one: past it, every new key shares
/// the series made for `overflowKey` (labelled `other`), so that a process
/// with many ports cannot grow a backend without bound. Behind a pthread
/// lock (`Locked`), which ThreadSanitizer follows (docs/design.md, "Locks
/// and user code"): under `Synchronization.Mutex` it reported a loop's
/// read and another thread's insert as a race.
final class SeriesTable<Key: Hashable & Sendable, Series: Sendable>: Sendable {
    private struct Entries {
        var series: [Key: Series] = [:]
        /// The keys given a series of their own, made or being made: at
        /// most the limit's count. Decided under the lock, with the look
        /// for the key, so that a key never gets its own series on one
        /// thread and the shared one on another (two looks and two locks
        /// let a key inserted between them fill the last place).
        var own: Set<Key> = []
    }

    private let limit: (count: Int, overflowKey: Key)?
    private let make: @Sendable (Key) -> Series
    private let entries = Locked(Entries())

    /// A table of at most `limit.count` keys besides `limit.overflowKey`'s; nil: no limit.
    init(limit: (count: Int, overflowKey: Key)? = nil, make: @escaping @Sendable (Key) -> Series) {
        self.limit = limit
        self.make = make
    }

    /// The series of `key`, made if it is new (and there is room).
    subscript(key: Key) -> Series {
        let (found, chosen) = entries.withLock { entries -> (Series?, Key) in
            if let found = entries.series[key] { return (found, key) }
            guard let limit else { return (nil, key) }
            if entries.own.contains(key) { return (nil, key) }
            if entries.own.count >= limit.count { return (entries.series[limit.overflowKey], limit.overflowKey) }
            entries.own.insert(key)
            return (nil, key)
        }
        if let found { return found }
        // Made outside the lock: it calls the program's metrics factory.
        let made = make(chosen)
        return entries.withLock { entries in
            if let raced = entries.series[chosen] { return raced }
            entries.series[chosen] = made
            return made
        }
    }
}
