/// Registration: one mechanism that adds, removes and finds every kind of
/// item a mode holds (S-MODE-1, S-MODE-3). What differs between kinds is in
/// their `ModeItem` conformance; the public `add`, `remove` and `contains`
/// overloads below only name the kinds.
extension RunLoop {
    // MARK: - Public API, per kind

    /// Adds a custom source to `mode` (or to every common mode for
    /// `.common`), calling its `schedule` handler for each mode it joins.
    /// Any thread. A source may be in several modes of several loops.
    public func add(_ source: CustomSource, forMode mode: Mode) { insert(source, forMode: mode) }

    /// Adds a timer to `mode` (or every common mode for `.common`) and
    /// re-arms the loop. Any thread. A timer belongs to one loop: adding it
    /// to a second loop is a programming error and traps.
    public func add(_ timer: Timer, forMode mode: Mode) { insert(timer, forMode: mode) }

    /// Adds an observer to `mode` (or every common mode for `.common`). Any
    /// thread. An observer belongs to one loop: adding it to a second traps.
    public func add(_ observer: RunLoopObserver, forMode mode: Mode) { insert(observer, forMode: mode) }

    /// Adds a socket source to `mode` (or every common mode for `.common`).
    /// Any thread. A source belongs to one loop: adding it to a second traps.
    ///
    /// - Throws: `RunLoopError` if the socket's ZMQ_FD cannot be read or
    ///   epoll refuses the fd; nothing was added then.
    public func add(_ source: SocketSource, forMode mode: Mode) throws(RunLoopError) {
        try insert(source, forMode: mode)
    }

    /// Removes a custom source from `mode`, calling its `cancel` handler. Any thread.
    public func remove(_ source: CustomSource, forMode mode: Mode) { withdraw(source, fromMode: mode) }

    /// Removes a timer from `mode` without invalidating it (CFRunLoopRemoveTimer). Any thread.
    public func remove(_ timer: Timer, forMode mode: Mode) { withdraw(timer, fromMode: mode) }

    /// Removes an observer from `mode` without invalidating it. Any thread.
    public func remove(_ observer: RunLoopObserver, forMode mode: Mode) { withdraw(observer, fromMode: mode) }

    /// Removes a socket source from `mode`; its messages wait in the socket. Any thread.
    public func remove(_ source: SocketSource, forMode mode: Mode) { withdraw(source, fromMode: mode) }

    /// Whether `source` is in `mode` (for `.common`: among the items added
    /// to `.common`). Any thread.
    public func contains(_ source: CustomSource, inMode mode: Mode) -> Bool { holds(source, inMode: mode) }

    /// Whether `timer` is in `mode` (for `.common`: among the items added to `.common`). Any thread.
    public func contains(_ timer: Timer, inMode mode: Mode) -> Bool { holds(timer, inMode: mode) }

    /// Whether `observer` is in `mode` (for `.common`: among the items added to `.common`). Any thread.
    public func contains(_ observer: RunLoopObserver, inMode mode: Mode) -> Bool { holds(observer, inMode: mode) }

    /// Whether `source` is in `mode` (for `.common`: among the items added to `.common`). Any thread.
    public func contains(_ source: SocketSource, inMode mode: Mode) -> Bool { holds(source, inMode: mode) }

    /// Marks `mode` common: every item added to `.common`, now or later, is
    /// in it too (S-MODE-3). Any thread.
    public func addCommonMode(_ mode: Mode) {
        guard mode != .common else { return }
        var joined: [any ModeItem] = []
        changeItems { state in
            guard state.isAlive, !state.isCommon(mode) else { return }
            state.commonModeNames.append(mode)
            let common = state.commonItems
            joinCommon(common.customSources, mode, &state, &joined)
            joinCommon(common.timers.timers, mode, &state, &joined)
            joinCommon(common.observers, mode, &state, &joined)
            joinCommon(common.socketSources, mode, &state, &joined)
            if let descriptor = state.mainQueueDescriptor { mainQueueJoins(mode, descriptor, &state) }
        }
        for item in joined { item.didJoin(self, mode: mode) }
    }

    // MARK: - The mechanism

    /// Adds `item` to `mode`, or for `.common` to the common items and every
    /// common mode. A loop whose thread has exited adds nothing and says so
    /// once (S-THR-3). If joining a mode fails, the item is left in none.
    func insert<Item: ModeItem>(_ item: Item, forMode mode: Mode) throws(Item.JoinError) {
        guard item.isValid else { return }
        precondition(
            item.bind(to: self),
            "RunLoop.add(_:forMode:): this \(Item.kindName) is already scheduled on another run loop. A \(Item.kindName) belongs to one loop at a time (in any of its modes): remove or invalidate it there first, or make one per loop."
        )
        // The modes joined, listed only for a kind that acts on them
        // (`observesModeChanges`). The two branches below join a mode the
        // same way, written out twice: a local function capturing `joined`
        // and `outdated` costs every add (docs/performance.md, "Tried and
        // not kept").
        let joined: [Mode]? = try state.withLock { (state) throws(Item.JoinError) -> [Mode]? in
            guard state.isAlive else { return nil }
            var outdated = false
            defer {
                if outdated { bumpItemsVersion() }
                noteTimerChange()
            }
            state.hasScheduled = true
            var joined: [Mode] = []
            do throws(Item.JoinError) {
                if mode == .common {
                    guard state.commonItems.insert(item) else { return [] }
                    for name in state.commonModeNames {
                        let (isNew, outdates) = state.withMode(name) { $0.join(item) }
                        guard isNew else { continue }
                        outdated = outdated || outdates
                        if Item.observesModeChanges { joined.append(name) }
                        try item.joinedLocked(name, &state, waiter: waiter)
                    }
                } else {
                    let (isNew, outdates) = state.withMode(mode) { $0.join(item) }
                    if isNew {
                        outdated = outdates
                        if Item.observesModeChanges { joined.append(mode) }
                        try item.joinedLocked(mode, &state, waiter: waiter)
                    }
                }
            } catch {
                // Leave no trace: out of every mode this call joined.
                outdated = true
                if mode == .common { _ = state.commonItems.remove(item) }
                for name in joined where state.withMode(name, { $0.remove(item) }) { item.leftLocked(name, &state) }
                if !state.holds(item) { item.forgottenLocked(&state) }
                throw error
            }
            return joined
        }
        guard let joined else {
            item.unbind()
            warnAddedToDeadLoop(Item.kindName)
            return
        }
        if !isOwnedByCurrentThread { wakeUp() }
        for name in joined { item.didJoin(self, mode: name) }
        if !item.isValid { removeFromAllModes(item) }  // lost a race with invalidate()
    }

    /// Removes `item` from `mode`, or for `.common` from the common items
    /// and every common mode.
    func withdraw<Item: ModeItem>(_ item: Item, fromMode mode: Mode) {
        let (left, stillInLoop): ([Mode], Bool) = changeItems(bumpingIf: { state in
            var left: [Mode] = []
            var outdated = false
            /// Takes the item out of mode `name`, noting what that changed.
            func leave(_ name: Mode, _ state: inout LoopState) {
                guard let (wasIn, outdates) = state.withExistingMode(name, { $0.leave(item) }), wasIn else { return }
                outdated = outdated || outdates
                if Item.observesModeChanges { left.append(name) }
            }
            if mode == .common {
                guard state.commonItems.remove(item) else { return (([], true), false) }
                for name in state.commonModeNames { leave(name, &state) }
            } else {
                leave(mode, &state)
            }
            for name in left { item.leftLocked(name, &state) }
            let stillInLoop = state.holds(item)
            if !stillInLoop { item.forgottenLocked(&state) }
            return ((left, stillInLoop), outdated)
        })
        if !stillInLoop { item.unbind() }
        for name in left { item.didLeave(self, mode: name, leftLoop: !stillInLoop) }
    }

    /// Removes `item` from every mode (its `invalidate()`).
    func removeFromAllModes<Item: ModeItem>(_ item: Item) {
        let left: [Mode] = changeItems(bumpingIf: { state in
            _ = state.commonItems.remove(item)
            var left: [Mode] = []
            var outdated = false
            state.forEachMode { items in
                let (wasIn, outdates) = items.leave(item)
                guard wasIn else { return }
                outdated = outdated || outdates
                if Item.observesModeChanges { left.append(items.mode) }
            }
            for name in left { item.leftLocked(name, &state) }
            item.forgottenLocked(&state)
            return (left, outdated)
        })
        item.unbind()
        for name in left { item.didLeave(self, mode: name, leftLoop: true) }
    }

    /// Whether `source` is in `mode` (`.common`: among the common items);
    /// a callout batch's slow path once the loop's items changed.
    @usableFromInline
    package func holdsSource(_ source: SocketSource, inMode mode: Mode) -> Bool { holds(source, inMode: mode) }

    func holds<Item: ModeItem>(_ item: Item, inMode mode: Mode) -> Bool {
        state.withLock { state in
            mode == .common ? state.commonItems.contains(item) : state.modes.read(mode) { $0.contains(item) } == true
        }
    }

    /// A timer's schedule changed from any thread (its fire date set later,
    /// or its tolerance, S-TMR-5): the loop wakes, if it sleeps, and
    /// re-arms from its heaps before it sleeps again. No snapshot is
    /// outdated (a run reads its heap, not its snapshot, for when to wake).
    func itemDidChange() { changeItems(bumpingIf: { _ in ((), false) }) }

    /// Copies the common items of one kind into a mode just marked common.
    private func joinCommon<Item: ModeItem>(_ items: [Item], _ mode: Mode, _ state: inout LoopState, _ joined: inout [any ModeItem]) {
        for item in items where state.withMode(mode, { $0.insert(item) }) {
            do {
                try item.joinedLocked(mode, &state, waiter: waiter)
                joined.append(item)
            } catch {
                _ = state.withMode(mode) { $0.remove(item) }
                logger.error("addCommonMode(\(mode)): a \(Item.kindName) could not join the new common mode: \(error)")
            }
        }
    }

    /// One warning per loop, whatever was added and however often
    /// (docs/design.md, "Errors": a dead loop).
    private func warnAddedToDeadLoop(_ kind: String) {
        let first: Bool = state.withLock { state in
            guard case .tornDown(warned: false) = state.lifecycle else { return false }
            state.lifecycle = .tornDown(warned: true)
            return true
        }
        if first {
            logger.warning("a \(kind) was added to the run loop of thread '\(threadName)', which has exited: nothing was added (S-THR-3). Later adds to this loop are ignored without a word.")
        }
    }
}

extension RunLoop {
    /// Puts `source` on this loop's list of ready sources, as if epoll had
    /// reported it: its next look needs no system call. On the loop's own
    /// thread only (the list is that thread's). `package`: the ports'
    /// network reader hands a tcp port its message this way.
    package func markReady(_ source: SocketSource) {
        assert(RunLoop.current === self, "RunLoopKit: markReady(_:) is for the loop's own thread")
        waiter.readyList.append(source, confirmed: true)
    }

    /// Takes `source` off the loop's ready list, where `markReady` put it,
    /// when what it was to do there was done meanwhile. On the loop's own
    /// thread only. `package`: the ports' network reader calls off a read
    /// that a send made.
    package func unmarkReady(_ source: SocketSource) {
        assert(RunLoop.current === self, "RunLoopKit: unmarkReady(_:) is for the loop's own thread")
        waiter.readyList.forgetDrained(source)
    }
}
