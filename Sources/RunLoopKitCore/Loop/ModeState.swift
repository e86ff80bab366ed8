/// What one mode of one loop holds (CFRunLoopMode). It lives inside the
/// loop's guarded state (`LoopState`), so only the loop's lock reaches it;
/// the loop thread works from a copy (`ModeSnapshot`), so that no user code
/// ever runs under that lock.
struct ModeState {
    let mode: RunLoop.Mode
    /// Kept sorted by order, then insertion (S-RUN-2 step 5).
    var customSources: [CustomSource] = []
    var socketSources: [SocketSource] = []
    /// By fire instant (`TimerHeap`): many timers, changed often, stay cheap.
    var timers: TimerHeap
    /// Kept sorted by order, then insertion (S-OBS-2).
    var observers: [RunLoopObserver] = []
    /// Made with the mode's first socket source; until then the mode
    /// sleeps on the loop's base wait set (its eventfd and timerfd only).
    var waitSet: WaitSet?

    /// The state of `mode`, whose timer heap is numbered `timerHeapID`
    /// among the loop's (`LoopState.withMode`, `LoopState.commonItemsHeapID`);
    /// the default serves only a state no timer joins (an empty snapshot's).
    /// The common items' timers (`.common`) need no order by instant: they
    /// never fire from there.
    init(mode: RunLoop.Mode, timerHeapID: UInt32 = 1) {
        self.mode = mode
        timers = TimerHeap(id: timerHeapID, ordersByInstant: mode != .common)
    }

    /// S-RUN-1: observers alone do not keep a run going, nor the library's
    /// auxiliary sources (`SocketSource.isAuxiliary`).
    var hasSourcesOrTimers: Bool {
        !customSources.isEmpty || !timers.isEmpty || socketSources.contains { !$0.isAuxiliary }
    }

    /// Adds `item` where its kind is kept; false if it was there already.
    mutating func insert<Item: ModeItem>(_ item: Item) -> Bool { Item.insert(item, into: &self) }

    /// Removes `item`; false if it was not there.
    mutating func remove<Item: ModeItem>(_ item: Item) -> Bool { Item.remove(item, from: &self) }

    /// Adds `item`: whether it was not there, and whether its joining
    /// outdates the loop's snapshot of the mode (`ModeItem.outdatesSnapshot`).
    mutating func join<Item: ModeItem>(_ item: Item) -> (joined: Bool, outdatesSnapshot: Bool) {
        guard Item.insert(item, into: &self) else { return (false, false) }
        return (true, Item.outdatesSnapshot(of: self))
    }

    /// Removes `item`: whether it was there, and whether its leaving
    /// outdates the loop's snapshot of the mode.
    mutating func leave<Item: ModeItem>(_ item: Item) -> (left: Bool, outdatesSnapshot: Bool) {
        guard Item.remove(item, from: &self) else { return (false, false) }
        return (true, Item.outdatesSnapshot(of: self))
    }

    func contains<Item: ModeItem>(_ item: Item) -> Bool { Item.isHeld(item, by: self) }
}
