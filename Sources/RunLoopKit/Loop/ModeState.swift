import Synchronization

/// What one mode of one loop holds (CFRunLoopMode). Every property is
/// guarded by the owning loop's lock; the loop thread works from a snapshot
/// (`ModeSnapshot`) so that no user code ever runs under that lock.
final class ModeState {
    let mode: RunLoop.Mode
    /// Kept sorted by order, then insertion (S-RUN-2 step 5).
    var customSources: [CustomSource] = []
    var socketSources: [SocketSource] = []
    var timers: [Timer] = []
    /// Kept sorted by order, then insertion (S-OBS-2).
    var observers: [RunLoopObserver] = []
    /// Created with the mode's first socket source; until then the mode
    /// sleeps on the loop's base wait set (its eventfd and timerfd only).
    var waitSet: WaitSet?

    init(mode: RunLoop.Mode) { self.mode = mode }

    /// S-RUN-1: observers alone do not keep a run going.
    var hasSourcesOrTimers: Bool { !customSources.isEmpty || !socketSources.isEmpty || !timers.isEmpty }

    /// Inserts keeping `order` ascending and insertion order among equals.
    static func insertOrdered<Item: AnyObject>(_ item: Item, into list: inout [Item], order: (Item) -> Int) -> Bool {
        if list.contains(where: { $0 === item }) { return false }
        let key = order(item)
        let index = list.firstIndex { order($0) > key } ?? list.endIndex
        list.insert(item, at: index)
        return true
    }

    static func append<Item: AnyObject>(_ item: Item, to list: inout [Item]) -> Bool {
        if list.contains(where: { $0 === item }) { return false }
        list.append(item)
        return true
    }

    static func remove<Item: AnyObject>(_ item: Item, from list: inout [Item]) -> Bool {
        guard let index = list.firstIndex(where: { $0 === item }) else { return false }
        list.remove(at: index)
        return true
    }
}

/// The loop thread's copy of the running mode's items, refreshed whenever
/// the loop's item version changes. Copying the arrays only retains their
/// buffers, so a refresh allocates nothing.
struct ModeSnapshot {
    var version: UInt64 = .max
    var customSources: [CustomSource] = []
    var timers: [Timer] = []
    var observers: [RunLoopObserver] = []
    var observedActivities: RunLoop.Activity = []
    var socketSources: [SocketSource] = []
    var socketSourceIDs: Set<ObjectIdentifier> = []
    /// Unique to each refresh of each snapshot in the process (see `contains`).
    var stamp: UInt64 = 0
    private static let nextStamp = Atomic<UInt64>(1)
    /// Whether the mode is one of the loop's common modes.
    var isCommon = false
    /// Socket sources whose type can send (see `SocketSource.needsCheckBeforeSleeping`).
    var socketsToCheckBeforeSleeping: [SocketSource] = []
    var waitSet: WaitSet?
    var hasSourcesOrTimers = false
    var monitor: (any RunLoopMonitor)?
    /// The mode's timers by fire instant; rebuilt after a refresh.
    var timerSchedule = TimerSchedule()

    /// Gives this snapshot a stamp no other snapshot has had.
    mutating func restamp() {
        stamp = Self.nextStamp.wrappingAdd(1, ordering: .relaxed).oldValue
    }

    /// Whether `source` is one of the mode's socket sources. A source stamped
    /// by this very refresh is (stamps are never reused); any other is looked
    /// up, then stamped, so a busy source is looked up once per refresh,
    /// not once per message. Nested runs of other modes may re-stamp a
    /// source: that only costs the next lookup.
    func contains(_ source: SocketSource) -> Bool {
        if source.memberStamp.load(ordering: .relaxed) == stamp { return true }
        guard socketSourceIDs.contains(ObjectIdentifier(source)) else { return false }
        source.memberStamp.store(stamp, ordering: .relaxed)
        return true
    }

}
