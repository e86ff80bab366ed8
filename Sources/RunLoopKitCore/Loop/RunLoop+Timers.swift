/// Timers made through a loop, the loop's clock (S-TMR-7), and firing the
/// due ones at step 9 of a pass.
extension RunLoop {
    /// Makes a timer that first fires `interval` seconds from now on this
    /// loop's clock, and adds it to the default mode. Any thread.
    ///
    /// - Parameters:
    ///   - interval: seconds until the first fire, and between fires if it repeats.
    ///   - userInfo: anything the block should find in `timer.userInfo`;
    ///     nil (the default) for none.
    ///   - repeats: whether it fires again every `interval` seconds.
    ///   - block: run on the loop's thread at each fire, given the timer.
    ///
    /// - Throws: `RunLoopError.invalidInterval` if the interval is negative,
    ///   NaN or infinite, or zero for a repeating timer.
    @discardableResult
    public func scheduledTimer(
        withTimeInterval interval: TimeInterval, userInfo: (any Sendable)? = nil, repeats: Bool,
        block: @escaping @Sendable (Timer) -> Void
    ) throws(RunLoopError) -> Timer {
        let timer = try Timer(timeInterval: interval, repeats: repeats, on: clock, userInfo: userInfo, block: block)
        add(timer, forMode: .default)
        return timer
    }

    /// Makes this loop measure its timers, `perform(afterDelay:)` and its
    /// run deadlines on `clock`, which moves only when a test advances it
    /// (S-TMR-7): RunLoopKitTesting's `RunLoop.use(_:)`. On the loop's own
    /// thread, before anything is scheduled on the loop.
    ///
    /// Misuse traps, since a test that gets it wrong would otherwise
    /// silently wait on the real clock: calling it after an item was added,
    /// on another thread, or on `RunLoop.main` (which always uses the real clock).
    package func use(manualClock clock: ManualClock) {
        precondition(!isMain, "RunLoop.use(_:): RunLoop.main always uses the real clock. Make a LoopThread(name:clock:) or use the clock on another thread's loop.")
        preconditionOwnedByCurrentThread("use(_:)")
        let accepted: Bool = state.withLock { state in
            guard !state.hasScheduled else { return false }
            state.clock = .manual(clock)
            bumpItemsVersion()
            noteTimerChange()
            return true
        }
        precondition(accepted, "RunLoop.use(_:): something was already scheduled on the run loop of '\(threadName)', so its clock can no longer change. Give the loop its TestClock first, right after RunLoop.current on its thread.")
        clock.attach(self)
    }

    /// The manual clock this loop runs on, or nil for the real clock.
    package var manualClock: ManualClock? {
        if case let .manual(clock) = clock { return clock }
        return nil
    }

    /// A timer's fire date was set earlier (any thread): it moves in the
    /// heap of every mode it is in, and the loop wakes to wait for the new
    /// instant (S-TMR-5). One set later only wakes the loop
    /// (`itemDidChange`): the heaps move it when it comes to the top. No
    /// snapshot is outdated: a mode's timers stay as many.
    func timerDidMove(_ timer: Timer) {
        changeItems(bumpingIf: { state in
            state.forEachMode { $0.timers.reschedule(timer) }
            return ((), false)
        })
    }

    // MARK: - Firing (step 9 of a pass)

    /// Step 9, first half: fires the mode's due timers, earliest first. A
    /// timer is never early (S-TMR-2). Returns how many fired.
    func fireDueTimers(_ snapshot: inout ModeSnapshot, mode: Mode) -> Int {
        refresh(&snapshot, mode: mode)
        // No clock read and no lock in the passes of a mode without timers.
        guard snapshot.hasTimers else { return 0 }
        let now = snapshot.clock.now()
        // Nor a lock while the heap, unchanged since the last look, has nothing due.
        if let earliest = snapshot.timerSchedule.earliest(ifReadAt: timerChanges.load(ordering: .acquiring)), now < earliest {
            return 0
        }
        // The scratch list is taken out for the lock's closure and put back.
        var scratch = dueTimers
        dueTimers = []
        // Empty already (emptied after each firing); `removeAll` would cost
        // a call into the standard library every pass.
        if !scratch.isEmpty { scratch.removeAll(keepingCapacity: true) }
        state.withLock { state in
            _ = state.withExistingMode(mode) { items in
                guard items.timers.earliest <= now else {
                    return snapshot.timerSchedule.keep(earliest: items.timers.earliest, readAt: timerChanges.load(ordering: .relaxed))
                }
                items.timers.takeDue(now: now, into: &scratch)
                noteTimerChange()
            }
        }
        guard !scratch.isEmpty else {
            dueTimers = scratch
            return 0
        }
        var fired = 0
        do {
            // A copy, because a timer's block may run the loop again (S-RUN-8),
            // which reuses the scratch list; released before the scratch is
            // emptied, so that emptying it keeps its buffer.
            let due = scratch
            for (index, timer) in due.enumerated() {
                if isStopPending {
                    // Still due: they fire in the next run.
                    timersLeftHeap(due[index...])
                    break
                }
                callout(.timer, snapshot, mode: mode, origin: timer.origin) { if timer.fireOnLoop(now: now) { fired += 1 } }
                timersLeftHeap(CollectionOfOne(timer))  // at its next fire instant, if it has one
            }
        }
        scratch.removeAll(keepingCapacity: true)
        dueTimers = scratch
        return fired
    }

    /// Puts timers taken out of the heaps to fire back in every mode they
    /// are still in (a nested run in another of their modes may have taken
    /// them out there too), at their next instants.
    private func timersLeftHeap<Timers: Sequence<Timer>>(_ timers: Timers) {
        state.withLock { state in
            for timer in timers where timer.isValid {
                state.forEachMode { $0.timers.reinsert(timer) }
            }
            noteTimerChange()
        }
    }
}
