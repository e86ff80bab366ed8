/// What one mode of one loop holds (CFRunLoopMode). It lives inside the
/// loop's guarded state (`LoopState`), so only the loop's lock reaches it;
/// the loop thread works from a copy (`ModeSnapshot`), so that no user code
/// ever runs under that lock.
struct ModeState {
    let mode: RunLoop.Mode
    /// Kept sorted by order, then insertion (S-RUN-2 step 5).
    var customSources: [CustomSource] = []
    var socketSources: [SocketSource] = []
    var timers: [Timer] = []
    /// Kept sorted by order, then insertion (S-OBS-2).
    var observers: [RunLoopObserver] = []
    /// Made with the mode's first socket source; until then the mode
    /// sleeps on the loop's base wait set (its eventfd and timerfd only).
    var waitSet: WaitSet?

    init(mode: RunLoop.Mode) { self.mode = mode }

    /// S-RUN-1: observers alone do not keep a run going.
    var hasSourcesOrTimers: Bool { !customSources.isEmpty || !socketSources.isEmpty || !timers.isEmpty }

    /// Adds `item` to its list, keeping `sortOrder` ascending and insertion
    /// order among equals; false if it was there already.
    mutating func insert<Item: ModeItem>(_ item: Item) -> Bool {
        let list = Item.list
        if self[keyPath: list].contains(where: { $0 === item }) { return false }
        if let key = item.sortOrder {
            let index = self[keyPath: list].firstIndex { ($0.sortOrder ?? .min) > key } ?? self[keyPath: list].endIndex
            self[keyPath: list].insert(item, at: index)
        } else {
            self[keyPath: list].append(item)
        }
        return true
    }

    /// Removes `item` from its list; false if it was not there.
    mutating func remove<Item: ModeItem>(_ item: Item) -> Bool {
        guard let index = self[keyPath: Item.list].firstIndex(where: { $0 === item }) else { return false }
        self[keyPath: Item.list].remove(at: index)
        return true
    }

    func contains<Item: ModeItem>(_ item: Item) -> Bool {
        self[keyPath: Item.list].contains { $0 === item }
    }
}
