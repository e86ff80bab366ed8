internal import CLinuxSupport
import Glibc

/// Running: the sequence of one run (S-RUN-2) and the entry points built on it (S-RUN-6).
extension RunLoop {
    // MARK: - Public entry points

    /// Runs the loop once in `mode` (CFRunLoopRunInMode): the primitive every
    /// other entry point repeats.
    ///
    /// Returns `.finished` at once, notifying no observer, if the mode has no
    /// source, timer or pending block (S-RUN-1) or is `.common` (S-MODE-4).
    /// A `seconds` of zero or less polls: one pass without sleeping (S-RUN-3).
    /// Runs may nest (S-RUN-8). Only the loop's own thread may call it.
    ///
    /// - Parameters:
    ///   - seconds: how long the run may last; `.infinity` for no deadline.
    ///     NaN is a programming error.
    ///   - returnAfterSourceHandled: return `.handledSource` after the first
    ///     source or perform request handled (never after a timer, S-RUN-5).
    @discardableResult
    public func run(mode: Mode = .default, seconds: TimeInterval, returnAfterSourceHandled: Bool = false) -> RunResult {
        precondition(!seconds.isNaN, "RunLoop.run(mode:seconds:): seconds is NaN. Pass a number of seconds, .infinity for no deadline, or 0 to poll.")
        let deadline = seconds == .infinity ? MonotonicClock.never : MonotonicClock.instant(secondsFromNow: seconds)
        return runOnce(mode: mode, deadline: deadline, returnAfterSourceHandled: returnAfterSourceHandled).result
    }

    /// One run in `mode` that returns after the first source handled or at
    /// `date` (NSRunLoop `runMode:beforeDate:`). Returns false only if the
    /// run could not start: the mode was empty or `.common` (S-RUN-6).
    @discardableResult
    public func run(mode: Mode, before date: Date) -> Bool {
        runOnce(mode: mode, deadline: MonotonicClock.instant(for: date), returnAfterSourceHandled: true).started
    }

    /// Runs the default mode until it has nothing left (NSRunLoop `run`):
    /// `stop()` does not end it, only removing every source and timer does
    /// (S-RUN-6). This is the keep-alive anti-pattern the seeds warn about:
    /// prefer `LoopThread`, which stops cleanly.
    public func run() {
        while runOnce(mode: .default, deadline: MonotonicClock.never, returnAfterSourceHandled: false).result != .finished {}
    }

    /// Runs the default mode until `date` or until it has nothing left
    /// (NSRunLoop `runUntilDate:`); `stop()` does not end it early (S-RUN-6).
    public func run(until date: Date) {
        let deadline = MonotonicClock.instant(for: date)
        while true {
            let result = runOnce(mode: .default, deadline: deadline, returnAfterSourceHandled: false).result
            if result == .finished || MonotonicClock.now() >= deadline { return }
        }
    }

    /// Runs the default mode until `stop()` or until it has nothing left
    /// (CFRunLoopRun). This is the entry point that `stop()` ends (S-RUN-6).
    public func runUntilStopped() {
        while true {
            let result = runOnce(mode: .default, deadline: MonotonicClock.never, returnAfterSourceHandled: false).result
            if result == .stopped || result == .finished { return }
        }
    }

    // MARK: - One run

    func runOnce(mode: Mode, deadline: UInt64, returnAfterSourceHandled: Bool) -> (result: RunResult, started: Bool) {
        preconditionOwnedByCurrentThread("run(mode: \(mode))")
        if mode == .common {
            #if DEBUG
            logger.warning("run(mode: .common) is invalid: .common is a set of modes, not a mode (S-MODE-4). Run .default or a named mode.")
            #endif
            return (.finished, false)
        }
        var snapshot = ModeSnapshot()
        refresh(&snapshot, mode: mode)
        guard !hasThreadExited, snapshot.hasSourcesOrTimers || hasBlocks(for: mode, isCommon: snapshot.isCommon) else {
            return (.finished, false)
        }
        lock.withLock { modeStack.append(mode) }
        defer { lock.withLock { _ = modeStack.popLast() } }
        notify(.entry, &snapshot, mode: mode)
        let result = runPasses(mode: mode, deadline: deadline, returnAfterSourceHandled: returnAfterSourceHandled, &snapshot)
        notify(.exit, &snapshot, mode: mode)
        return (result, true)
    }

    /// Steps 2 to 11 of S-RUN-2, repeated until a result is decided.
    private func runPasses(mode: Mode, deadline: UInt64, returnAfterSourceHandled: Bool, _ snapshot: inout ModeSnapshot) -> RunResult {
        // A stop requested while no run was in progress (S-RUN-4).
        if stopRequested.exchange(false, ordering: .acquiringAndReleasing) { return .stopped }
        let pollOnly = deadline <= MonotonicClock.now()  // S-RUN-3
        while true {
            let monitored = snapshot.monitor != nil
            let passStart = monitored ? MonotonicClock.now() : 0
            var sleptNanoseconds: UInt64 = 0

            // A stop ends the run right after the callout that asked for it
            // (S-RUN-4): every later step of the pass is skipped, and the
            // loop does not sleep.
            notify(.beforeTimers, &snapshot, mode: mode)                      // 2
            notify(.beforeSources, &snapshot, mode: mode)                     // 3
            var handled = drainBlocks(&snapshot, mode: mode)                  // 4
            if performCustomSources(&snapshot, mode: mode, stopAfterOne: returnAfterSourceHandled) {  // 5
                handled = true
                _ = drainBlocks(&snapshot, mode: mode)
            }
            if !isStopPending && !hasReadySocketSource(&snapshot) {           // 6
                let willSleep = !pollOnly && !handled && !isStopPending
                if willSleep { notify(.beforeWaiting, &snapshot, mode: mode) } // 7
                let sleepStart = monitored && willSleep ? MonotonicClock.now() : 0
                // A stop asked for by a beforeWaiting observer: look, don't sleep.
                waitForEvents(&snapshot, mode: mode, deadline: deadline, block: willSleep && !isStopPending)  // 8
                if willSleep {
                    if monitored { sleptNanoseconds = MonotonicClock.now() - sleepStart }
                    notify(.afterWaiting, &snapshot, mode: mode)
                }
            }
            let firedTimers = fireDueTimers(&snapshot, mode: mode)             // 9
            if handleOneSocketSource(&snapshot, mode: mode) { handled = true }
            if drainBlocks(&snapshot, mode: mode) { handled = true }          // 10

            let passNumber = completedPasses.wrappingAdd(1, ordering: .relaxed).newValue
            if let monitor = snapshot.monitor {
                monitor.runLoop(self, didFinish: PassReport(
                    mode: mode, threadName: threadName, passNumber: passNumber,
                    durationNanoseconds: MonotonicClock.now() - passStart, sleptNanoseconds: sleptNanoseconds,
                    handledSource: handled, firedTimers: firedTimers))
            }

            // 11: decide, in CFRunLoop's order.
            if handled && returnAfterSourceHandled { return .handledSource }
            if deadline != MonotonicClock.never && MonotonicClock.now() >= deadline { return .timedOut }
            // A load first: the exchange is a locked instruction, and most passes have no stop.
            if isStopPending && stopRequested.exchange(false, ordering: .acquiringAndReleasing) { return .stopped }
            refresh(&snapshot, mode: mode)
            if !snapshot.hasSourcesOrTimers && !hasBlocks(for: mode, isCommon: snapshot.isCommon) { return .finished }
        }
    }

    // MARK: - Snapshot

    /// Re-reads the mode's items if anything changed since the last look
    /// (one atomic load when nothing did). Modes that were never used stay
    /// unmade: running one is simply running an empty mode.
    func refresh(_ snapshot: inout ModeSnapshot, mode: Mode) {
        let version = itemsVersion.load(ordering: .acquiring)
        guard version != snapshot.version else { return }
        let newSockets: [SocketSource] = lock.withLock {
            snapshot.version = itemsVersion.load(ordering: .acquiring)
            snapshot.isCommon = commonModeNames.contains(mode)
            snapshot.monitor = monitorStorage
            if let state = modes[mode] {
                snapshot.customSources = state.customSources
                snapshot.timers = state.timers
                snapshot.observers = state.observers
                snapshot.socketSources = state.socketSources
                snapshot.waitSet = state.waitSet
                snapshot.hasSourcesOrTimers = state.hasSourcesOrTimers
            } else {
                snapshot.customSources = []
                snapshot.timers = []
                snapshot.observers = []
                snapshot.socketSources = []
                snapshot.waitSet = nil
                snapshot.hasSourcesOrTimers = false
            }
            guard !socketsToCheck.isEmpty else { return [] }
            defer { socketsToCheck.removeAll() }
            return socketsToCheck
        }
        snapshot.observedActivities = snapshot.observers.reduce(into: []) { $0.formUnion($1.activities) }
        snapshot.socketSourceIDs = Set(snapshot.socketSources.map(ObjectIdentifier.init))
        snapshot.restamp()
        snapshot.socketsToCheckBeforeSleeping = snapshot.socketSources.filter(\.needsCheckBeforeSleeping)
        snapshot.timerSchedule.rebuild(snapshot.timers)
        for source in newSockets { appendToReadyList(source) }
    }

    func hasBlocks(for mode: Mode, isCommon: Bool) -> Bool {
        guard pendingBlockCount.load(ordering: .acquiring) > 0 else { return false }
        return lock.withLock { blocks.containsBlock(for: mode, isCommon: isCommon) }
    }

    // MARK: - Callouts

    /// Runs one callout, timing it for the monitor if there is one.
    @inline(__always)
    private func callout(_ kind: CalloutKind, _ snapshot: ModeSnapshot, mode: Mode, _ body: () -> Void) {
        guard let monitor = snapshot.monitor else { return body() }
        let start = MonotonicClock.now()
        body()
        let duration = MonotonicClock.now() - start
        monitor.runLoop(self, didFinish: CalloutReport(
            kind: kind, mode: mode, threadName: threadName, startNanoseconds: start, durationNanoseconds: duration))
    }

    /// Tells the mode's observers of `activity`, in order (S-OBS-2). Works
    /// on a copy of the list, so observers may add and remove anything,
    /// themselves included, without skipping others (S-OBS-3).
    private func notify(_ activity: Activity, _ snapshot: inout ModeSnapshot, mode: Mode) {
        refresh(&snapshot, mode: mode)
        guard snapshot.observedActivities.contains(activity) else { return }
        let observers = snapshot.observers
        for observer in observers where observer.activities.contains(activity) && observer.isValid {
            // Entry and exit are always told; between them, a stop ends the
            // pass after the callout that asked for it (S-RUN-4). Except that
            // beforeWaiting and afterWaiting come in pairs: once the loop has
            // begun telling beforeWaiting, every waiting observer is told
            // both, as CFRunLoop tells afterWaiting after every wake-up
            // (S-RUN-2 step 8), a stop's included.
            if isStopPending && !Self.activitiesToldDespiteStop.contains(activity) { return }
            callout(.observer(activity), snapshot, mode: mode) { observer.call(activity) }
        }
    }

    private static let activitiesToldDespiteStop: Activity = [.entry, .exit, .beforeWaiting, .afterWaiting]

    /// A stop was asked for and not yet turned into a result.
    var isStopPending: Bool { stopRequested.load(ordering: .relaxed) }

    /// Step 4 and 10: runs the blocks queued for this mode, oldest first
    /// (S-BLK-4). Blocks queued while draining wait for the next pass, and a
    /// stop ends the drain after the block in progress. Returns whether any ran.
    private func drainBlocks(_ snapshot: inout ModeSnapshot, mode: Mode) -> Bool {
        // Most passes find no block: an atomic load instead of the lock.
        guard pendingBlockCount.load(ordering: .acquiring) > 0 else { return false }
        var ran = false
        var remaining = -1
        let isCommon = snapshot.isCommon
        while true {
            // Checked before each block: a stop that came during an earlier
            // callout of this pass must not start another (LoopThread.stop
            // discards the rest).
            if isStopPending { return ran }
            let next: PendingBlock? = lock.withLock {
                if remaining < 0 { remaining = blocks.count }
                guard remaining > 0, let block = blocks.popFirst(matching: mode, isCommon: isCommon, limit: remaining) else {
                    return nil
                }
                remaining -= 1
                pendingBlockCount.wrappingSubtract(1, ordering: .releasing)
                return block
            }
            guard let block = next else { return ran }
            callout(.block, snapshot, mode: mode) { block.body() }
            ran = true
        }
    }

    /// Step 5: performs every signalled custom source of the mode, in order;
    /// with `stopAfterOne`, only the first. Returns whether any was performed.
    private func performCustomSources(_ snapshot: inout ModeSnapshot, mode: Mode, stopAfterOne: Bool) -> Bool {
        refresh(&snapshot, mode: mode)
        var performed = false
        let sources = snapshot.customSources
        for source in sources where source.isValid {
            if isStopPending { break }
            guard source.takeSignal() else { continue }
            callout(.customSource, snapshot, mode: mode) { source.perform() }
            performed = true
            if stopAfterOne { break }
        }
        return performed
    }

    // MARK: - Socket sources

    private func appendToReadyList(_ source: SocketSource, confirmed: Bool = false) {
        guard source.readyMark.load(ordering: .relaxed) != readyID else { return }
        source.readyMark.store(readyID, ordering: .relaxed)
        readyList.append(source, confirmed: confirmed)
    }

    /// Clears this loop's mark on a source taken off its ready list; a mark
    /// another loop has set since (the source moved) is left alone.
    func forgetReady(_ source: SocketSource) {
        _ = source.readyMark.compareExchange(expected: readyID, desired: 0, ordering: .relaxed)
    }

    /// Step 6: is a socket source of this mode ready now? Sockets that can
    /// send are looked at first, since a send outside their handler may have
    /// consumed their readiness edge.
    private func hasReadySocketSource(_ snapshot: inout ModeSnapshot) -> Bool {
        for source in snapshot.socketsToCheckBeforeSleeping
        where source.readyMark.load(ordering: .relaxed) != readyID && source.isValid && source.hasInput() {
            appendToReadyList(source, confirmed: true)
        }
        return firstReadyIndex(snapshot) != nil
    }

    /// The first source on the ready list that is in this mode and has
    /// input. Entries without input leave the list; entries of other modes
    /// stay for when the loop runs one of theirs (S-SRC1-2), unless their
    /// source has left this loop.
    private func firstReadyIndex(_ snapshot: ModeSnapshot) -> Int? {
        var index = 0
        while index < readyList.count {
            let source = readyList.source(at: index)
            if !source.isValid {
                forgetReady(readyList.remove(at: index))
                continue
            }
            guard snapshot.contains(source) else {
                if source.binding.loop !== self {
                    forgetReady(readyList.remove(at: index))
                } else {
                    index += 1
                }
                continue
            }
            if readyList.isConfirmed(at: index) || source.hasInput() {
                readyList.confirm(at: index)
                return index
            }
            forgetReady(readyList.remove(at: index))
        }
        return nil
    }

    /// Step 9, second half: one socket source event per pass (S-SRC1-1). A
    /// socket goes to the back of the list afterwards, so that a busy socket
    /// cannot starve the others, and is looked at again before the loop sleeps.
    private func handleOneSocketSource(_ snapshot: inout ModeSnapshot, mode: Mode) -> Bool {
        guard !isStopPending, let index = firstReadyIndex(snapshot) else { return false }
        let source = readyList.remove(at: index)
        if source.isSocket && source.isValid {
            // Back of the list before the callout (its mark stays set), so
            // that a nested run inside the handler finds it there.
            readyList.append(source, confirmed: false)
        } else {
            forgetReady(source)
        }
        callout(.socketSource, snapshot, mode: mode) { source.handle() }
        return true
    }

    // MARK: - Sleeping

    /// Step 8: one epoll_wait on the mode's wait set, blocking or only
    /// looking. Arms the timerfd for the earlier of the mode's next timer
    /// (within its tolerance) and the run's deadline.
    private func waitForEvents(_ snapshot: inout ModeSnapshot, mode: Mode, deadline: UInt64, block: Bool) {
        // A beforeWaiting observer may just have added or moved a timer.
        refresh(&snapshot, mode: mode)
        guard let waitSet = snapshot.waitSet ?? baseWaitSet, let timer = wakeUpTimer else { return }
        if block {
            timer.arm(min(deadline, snapshot.timerSchedule.wakeInstant()))
            waiting.store(true, ordering: .releasing)
        }
        let count = waitSet.wait(into: eventBuffer, capacity: Self.eventBufferCapacity, block: block)
        if block { waiting.store(false, ordering: .releasing) }
        for index in 0..<count {
            let token = eventBuffer[index].data.u64
            switch token {
            case WaitSet.wakeUpToken:
                wakeUpSignal.drain()
                wakeUpPending.store(false, ordering: .releasing)
            case WaitSet.timerToken:
                timer.drain()
            default:
                if let source = lock.withLock({ registeredSockets[token] }) { appendToReadyList(source) }
            }
        }
    }

    // MARK: - Timers

    /// Step 9, first half: fires the mode's due timers, earliest first. A
    /// timer is never early (S-TMR-2). Returns how many fired.
    private func fireDueTimers(_ snapshot: inout ModeSnapshot, mode: Mode) -> Int {
        refresh(&snapshot, mode: mode)
        // No clock read in the passes of a mode without timers.
        guard snapshot.timerSchedule.earliest != MonotonicClock.never else { return 0 }
        let now = MonotonicClock.now()
        guard snapshot.timerSchedule.earliest <= now else { return 0 }
        dueTimers.removeAll(keepingCapacity: true)
        snapshot.timerSchedule.takeDue(now: now, into: &dueTimers)
        var fired = 0
        do {
            // A copy, because a timer's block may run the loop again (S-RUN-8),
            // which reuses the scratch list; released before the scratch is
            // emptied, so that emptying it keeps its buffer.
            let due = dueTimers
            for (index, timer) in due.enumerated() {
                if isStopPending {
                    // Still due: they fire in the next run.
                    for waiting in due[index...] { snapshot.timerSchedule.insert(waiting) }
                    break
                }
                callout(.timer, snapshot, mode: mode) { if timer.fireOnLoop(now: now) { fired += 1 } }
                snapshot.timerSchedule.insert(timer)  // at its next fire instant, if it has one
            }
        }
        dueTimers.removeAll(keepingCapacity: true)
        return fired
    }
}
