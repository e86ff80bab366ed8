/// Teardown at thread exit (S-THR-3): everything the loop holds is released
/// on its own thread, and every later add or perform is refused.
extension RunLoop {
    /// Releases everything the loop holds; on the loop's thread, at its exit.
    func tearDown() {
        var departed: [(any ModeItem, Mode)] = []
        let pending: [PendingBlock]? = state.withLock { state in
            guard state.isAlive else { return nil }
            state.lifecycle = .tornDown(warned: false)
            for items in state.modes.values {
                departed += items.customSources.map { ($0, items.mode) }
                departed += items.timers.timers.map { ($0, items.mode) }
                departed += items.observers.map { ($0, items.mode) }
                departed += items.socketSources.map { ($0, items.mode) }
            }
            state.modes.removeAll()
            state.commonItems = ModeState(mode: .common)
            state.registeredSockets.removeAll()
            state.socketsToCheck.removeAll()
            state.delayedPerforms.removeAll()
            state.monitor = nil
            bumpItemsVersion()
            pendingBlockCount.store(0, ordering: .releasing)
            return state.blocks.removeAll()
        }
        guard let pending else { return }
        waiter.close()
        for (item, mode) in departed { item.loopDidTearDown(self, mode: mode) }
        for block in pending { block.discarded?(.loopGone(threadName: threadName)) }
        dueTimers.removeAll()
        if !pending.isEmpty {
            logger.debug("run loop torn down at thread exit; \(pending.count) queued block(s) discarded")
        }
    }
}
