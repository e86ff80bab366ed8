@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Series made once per key and kept (a port's counters, a drop reason's
/// counter), up to a limit if there is one: past it, every new key shares
/// the series made for `overflowKey` (labelled `other`), so that a process
/// with many ports cannot grow a backend without bound. Behind a pthread
/// lock (`Locked`), which ThreadSanitizer follows (docs/design.md, "Locks
/// and user code"): under `Synchronization.Mutex` it reported a loop's
/// read and another thread's insert as a race.
final class SeriesTable<Key: Hashable & Sendable, Series: Sendable>: Sendable {
    private let limit: (count: Int, overflowKey: Key)?
    private let make: @Sendable (Key) -> Series
    private let series = Locked<[Key: Series]>([:])

    /// A table of at most `limit.count` keys besides `limit.overflowKey`'s; nil: no limit.
    init(limit: (count: Int, overflowKey: Key)? = nil, make: @escaping @Sendable (Key) -> Series) {
        self.limit = limit
        self.make = make
    }

    /// The series of `key`, made if it is new (and there is room).
    subscript(key: Key) -> Series {
        if let found = series.withLock({ $0[key] }) { return found }
        var key = key
        if let limit, series.withLock({ $0.count >= limit.count }) { key = limit.overflowKey }
        // Made outside the lock: it calls the program's metrics factory.
        let made = make(key)
        return series.withLock { table in
            if let raced = table[key] { return raced }
            table[key] = made
            return made
        }
    }
}
