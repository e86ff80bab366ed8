internal import CLinuxSupport
import Glibc
import Synchronization

/// Running: the sequence of one run (S-RUN-2) and the entry points built on it (S-RUN-6).
extension RunLoop {
    // MARK: - Public entry points

    /// Runs the loop once in `mode` (CFRunLoopRunInMode): the primitive every
    /// other entry point repeats.
    ///
    /// Returns `.finished` at once, notifying no observer, if the mode has no
    /// source, timer or pending block (S-RUN-1) or is `.common` (S-MODE-4).
    /// On the main thread, `RunLoop.main`'s common modes are never empty:
    /// they run `DispatchQueue.main` and its `@MainActor` jobs (S-EXEC-3).
    /// A `seconds` of zero or less polls: one pass without sleeping (S-RUN-3).
    /// Runs may nest (S-RUN-8). Only the loop's own thread may call it.
    ///
    /// - Parameters:
    ///   - mode: the mode to run; only its items are serviced (S-MODE-2).
    ///   - seconds: how long the run may last; `.infinity` for no deadline.
    ///     NaN is a programming error.
    ///   - returnAfterSourceHandled: return `.handledSource` after the first
    ///     source or perform request handled (never after a timer, S-RUN-5).
    @discardableResult
    public func run(mode: Mode = .default, seconds: TimeInterval, returnAfterSourceHandled: Bool = false) -> RunResult {
        precondition(!seconds.isNaN, "RunLoop.run(mode:seconds:): seconds is NaN. Pass a number of seconds, .infinity for no deadline, or 0 to poll.")
        let deadline = seconds == .infinity ? MonotonicClock.never : clock.instant(secondsFromNow: seconds)
        return runOnce(mode: mode, deadline: deadline, returnAfterSourceHandled: returnAfterSourceHandled).result
    }

    /// One run in `mode` that returns after the first source handled or at
    /// `date` (NSRunLoop `runMode:beforeDate:`). Returns false only if the
    /// run could not start: the mode was empty or `.common` (S-RUN-6).
    @discardableResult
    public func run(mode: Mode, before date: Date) -> Bool {
        runOnce(mode: mode, deadline: clock.instant(for: date), returnAfterSourceHandled: true).started
    }

    /// Runs the loop once in `mode`, until a source is handled or `date`
    /// (NSRunLoop `acceptInput(forMode:before:)`): `run(mode:before:)`
    /// without its result. Only the loop's own thread may call it.
    public func acceptInput(forMode mode: Mode, before date: Date) {
        run(mode: mode, before: date)
    }

    /// Runs the default mode until it has nothing left (NSRunLoop `run`):
    /// `stop()` does not end it, only removing every source and timer does
    /// (S-RUN-6); on the main thread's loop, whose default mode stands for
    /// the main queue (S-EXEC-3), nothing does. This is the keep-alive anti-pattern Apple's documentation
    /// warns about: prefer `LoopThread`, which stops cleanly.
    public func run() {
        var snapshot = ModeSnapshot()
        while runOnce(mode: .default, deadline: MonotonicClock.never, returnAfterSourceHandled: false, reusing: &snapshot).result
            != .finished {}
    }

    /// Runs the default mode until `date` or until it has nothing left
    /// (NSRunLoop `runUntilDate:`); `stop()` does not end it early (S-RUN-6).
    public func run(until date: Date) {
        let clock = self.clock
        let deadline = clock.instant(for: date)
        var snapshot = ModeSnapshot()
        while true {
            let result = runOnce(mode: .default, deadline: deadline, returnAfterSourceHandled: false, reusing: &snapshot).result
            if result == .finished || clock.now() >= deadline { return }
        }
    }

    /// Runs the default mode until `stop()` or until it has nothing left
    /// (CFRunLoopRun). This is the entry point that `stop()` ends (S-RUN-6).
    public func runUntilStopped() {
        var snapshot = ModeSnapshot()
        while true {
            let result = runOnce(mode: .default, deadline: MonotonicClock.never, returnAfterSourceHandled: false, reusing: &snapshot).result
            if result == .stopped || result == .finished { return }
        }
    }

    /// Makes one polling pass in `mode` and returns the fire date of the
    /// mode's next timer (NSRunLoop `limitDate(forMode:)`, S-RUN-10):
    /// `Date.distantFuture` when the mode has sources but no timer (or is a
    /// common mode of the main loop, S-EXEC-3), nil when the mode is empty
    /// (S-RUN-1) or `.common`. Only the loop's own thread
    /// may call it, since it runs the loop.
    public func limitDate(forMode mode: Mode) -> Date? {
        guard runOnce(mode: mode, deadline: 0, returnAfterSourceHandled: true).started else { return nil }
        var snapshot = ModeSnapshot()
        refresh(&snapshot, mode: mode)
        guard hasWork(snapshot, mode: mode) else { return nil }
        let timers = state.withLock { $0.modes.read(mode) { $0.timers.timers } ?? [] }
        var next: Timer?
        for timer in timers where timer.isValid {
            if timer.nextFireInstant < (next?.nextFireInstant ?? MonotonicClock.never) { next = timer }
        }
        return next?.fireDate ?? .distantFuture
    }

    /// The clock this loop's timers and run deadlines are measured on.
    var clock: LoopClock { state.withLock { $0.clock } }

    // MARK: - One run

    /// One run. `deadline` is an instant on the loop's clock, or on the
    /// real clock with `deadlineOnRealClock` (a request's private wait,
    /// which bounds a wait on another process even on a test-clock loop).
    package func runOnce(
        mode: Mode, deadline: UInt64, deadlineOnRealClock: Bool = false, returnAfterSourceHandled: Bool
    ) -> (result: RunResult, started: Bool) {
        var snapshot = ModeSnapshot()
        return runOnce(mode: mode, deadline: deadline, deadlineOnRealClock: deadlineOnRealClock,
                       returnAfterSourceHandled: returnAfterSourceHandled, reusing: &snapshot)
    }

    /// One run that starts from `snapshot`: the snapshot an earlier run of
    /// this loop left, for a caller that runs a mode over and over (a run
    /// that repeats until finished, a request's private mode), or a fresh
    /// one. It is read again only if the loop's items changed since: a fresh
    /// snapshot costs a copy of the mode's items and allocations. One of
    /// another mode is replaced.
    package func runOnce(
        mode: Mode, deadline: UInt64, deadlineOnRealClock: Bool = false, returnAfterSourceHandled: Bool,
        reusing snapshot: inout ModeSnapshot
    ) -> (result: RunResult, started: Bool) {
        preconditionOwnedByCurrentThread("run(mode: \(mode))")
        if mode == .common {
            #if DEBUG
            logger.warning("run(mode: .common) is invalid: .common is a set of modes, not a mode (S-MODE-4). Run .default or a named mode.")
            #endif
            return (.finished, false)
        }
        if let mainQueue { takeOnFirstRun(mainQueue) }
        if snapshot.mode != mode { snapshot = ModeSnapshot() }
        refresh(&snapshot, mode: mode)
        guard !hasThreadExited, hasWork(snapshot, mode: mode) else {
            return (.finished, false)
        }
        let isNested = state.withLock { state in
            defer { state.modeStack.append(mode) }; return !state.modeStack.isEmpty
        }
        // A wake-up from before the run is answered by its first pass, not
        // by a sleep that ends at once. A nested run gives it back as it
        // returns, for the pass it interrupted, whose earlier steps it may
        // have missed (S-RUN-7).
        let forgotWakeUp = waiter.forgetEarlierWakeUp()
        defer {
            state.withLock { _ = $0.modeStack.popLast() }
            if _slowPath(forgotWakeUp && isNested) { waiter.wakeUp() }
        }
        notify(.entry, &snapshot, mode: mode)
        let deadlineClock = deadlineOnRealClock ? LoopClock.real : snapshot.clock
        let result = runPasses(
            mode: mode, deadline: deadline, on: deadlineClock,
            returnAfterSourceHandled: returnAfterSourceHandled, &snapshot)
        notify(.exit, &snapshot, mode: mode)
        return (result, true)
    }

    /// Steps 2 to 11 of S-RUN-2, repeated until a result is decided.
    private func runPasses(
        mode: Mode, deadline: UInt64, on deadlineClock: LoopClock, returnAfterSourceHandled: Bool,
        _ snapshot: inout ModeSnapshot
    ) -> RunResult {
        // A stop requested while no run was in progress (S-RUN-4).
        if stopRequested.exchange(false, ordering: .acquiringAndReleasing) { return .stopped }
        let pollOnly = deadline <= deadlineClock.now()  // S-RUN-3
        // The timerfd wakes the loop for a deadline only on the real clock;
        // a test clock's advance wakes it instead (S-TMR-7).
        let wakeDeadline = deadlineClock.isReal ? deadline : MonotonicClock.never
        // On a test clock, what is already due must not wait for an advance.
        let testDeadlinePassed = { _slowPath(!deadlineClock.isReal) && deadline <= deadlineClock.now() }
        while true {
            // The process's tracer: one load and a branch a pass while there is none.
            if _slowPath(Self.tracing.load(ordering: .relaxed)) {
                snapshot.tracer = Self.currentTracer
            } else if _slowPath(snapshot.tracer != nil) {
                snapshot.tracer = nil
            }
            let monitored = snapshot.isReported
            let passStart = monitored ? MonotonicClock.now() : 0
            var sleptNanoseconds: UInt64 = 0
            var sleepStart: UInt64 = 0

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
            if !isStopPending && !isMainQueueDue(snapshot) && !waiter.readyList.hasReadySource(snapshot, of: self) {  // 6
                let willSleep = !pollOnly && !handled && !isStopPending && stillHasWork(&snapshot, mode: mode)
                if willSleep { notify(.beforeWaiting, &snapshot, mode: mode) } // 7
                sleepStart = monitored && willSleep ? MonotonicClock.now() : 0
                // A stop asked for by a beforeWaiting observer: look, don't sleep.
                waitForEvents(&snapshot, mode: mode, deadline: wakeDeadline,
                              block: willSleep && !isStopPending && !testDeadlinePassed())  // 8
                if willSleep {
                    if monitored { sleptNanoseconds = MonotonicClock.now() - sleepStart }
                    notify(.afterWaiting, &snapshot, mode: mode)
                }
            }
            let firedTimers = fireDueTimers(&snapshot, mode: mode)             // 9
            // One port per pass: the main queue, as CFRunLoop's dispatch
            // port, or else a socket source (S-EXEC-3, S-SRC1-1).
            if isMainQueueDue(snapshot) && !isStopPending, let mainQueue {
                drainMainQueue(mainQueue, snapshot, mode: mode)
                handled = true
            } else if handleOneSocketSource(&snapshot, mode: mode, returnAfterSourceHandled: returnAfterSourceHandled) {
                handled = true
            }
            if drainBlocks(&snapshot, mode: mode) { handled = true }          // 10

            // Only this thread writes it: a load and a store, not a locked
            // read-modify-write.
            let passNumber = completedPasses.load(ordering: .relaxed) &+ 1
            completedPasses.store(passNumber, ordering: .relaxed)
            if _slowPath(monitored) {
                reportPass(
                    passNumber, mode: mode, start: passStart, sleepStart: sleepStart, slept: sleptNanoseconds,
                    handled: handled, firedTimers: firedTimers, snapshot)
            }

            // 11: decide, in CFRunLoop's order.
            if handled && returnAfterSourceHandled { return .handledSource }
            if deadline != MonotonicClock.never && deadlineClock.now() >= deadline { return .timedOut }
            // A load first: the exchange is a locked instruction, and most passes have no stop.
            if isStopPending && stopRequested.exchange(false, ordering: .acquiringAndReleasing) { return .stopped }
            refresh(&snapshot, mode: mode)
            if !hasWork(snapshot, mode: mode) { return .finished }
        }
    }

    // Out of line, what most passes skip: a pass's code is fetched again at
    // each wake-up, and what lies between its hot parts is fetched with
    // them (docs/performance.md, "Over tcp").

    @inline(never)
    private func drainMainQueue(_ mainQueue: MainQueue, _ snapshot: ModeSnapshot, mode: Mode) {
        callout(.mainQueue, snapshot, mode: mode) { mainQueue.drain() }
    }

    @inline(never)
    private func reportPass(
        _ number: UInt64, mode: Mode, start: UInt64, sleepStart: UInt64, slept: UInt64, handled: Bool, firedTimers: Int,
        _ snapshot: ModeSnapshot
    ) {
        let report = PassReport(
            mode: mode, threadName: threadName, passNumber: number, startNanoseconds: start,
            durationNanoseconds: MonotonicClock.now() - start, sleepStartNanoseconds: sleepStart,
            sleptNanoseconds: slept, handledSource: handled, firedTimers: firedTimers)
        snapshot.monitor?.runLoop(self, didFinish: report)
        snapshot.tracer?.runLoop(self, didFinish: report)
    }

    /// Whether the mode is not empty (S-RUN-1): it has a source or timer, a
    /// block or job waits for it, or, on the main loop, it is a common mode
    /// and so stands for the main queue (S-EXEC-3), except in a run nested
    /// in a main-queue drain.
    func hasWork(_ snapshot: ModeSnapshot, mode: Mode) -> Bool {
        snapshot.hasSourcesOrTimers
            || (snapshot.holdsMainQueue && mainQueue?.keepsCommonModesRunning == true)
            || hasBlocks(for: mode, isCommon: snapshot.isCommon)
    }

    // MARK: - Snapshot

    /// Re-reads the mode's items if anything changed since the last look
    /// (one atomic load when nothing did). Modes that were never used stay
    /// unmade: running one is simply running an empty mode.
    // Inlined: a pass looks a dozen times, a call each would cost more than the load.
    @inline(__always)
    func refresh(_ snapshot: inout ModeSnapshot, mode: Mode) {
        guard itemsVersion.load(ordering: .acquiring) != snapshot.version else { return }
        reread(&snapshot, mode: mode)
    }

    /// `refresh`, once something changed: the copy, under the loop's lock.
    @inline(never)
    private func reread(_ snapshot: inout ModeSnapshot, mode: Mode) {
        let newSockets: [SocketSource] = state.withLock { state in
            snapshot.version = itemsVersion.load(ordering: .acquiring)
            snapshot.copy(mode, from: state)
            guard !state.socketsToCheck.isEmpty else { return [] }
            defer { state.socketsToCheck.removeAll() }
            return state.socketsToCheck
        }
        snapshot.derive()
        for source in newSockets { waiter.readyList.append(source) }
    }

    // MARK: - Callouts

    /// Runs one callout, timing it for the monitor if there is one. `origin`
    /// (a queued block's or a delayed perform's) is an autoclosure so that
    /// without a monitor it is not even read, and the public form, which
    /// makes a String, is built only for a monitor.
    @inline(__always)
    func callout(
        _ kind: CalloutKind, _ snapshot: ModeSnapshot, mode: Mode,
        origin: @autoclosure () -> BlockOrigin? = nil, _ body: () -> Void
    ) {
        guard _slowPath(snapshot.isReported) else { return body() }
        let start = MonotonicClock.now()
        body()
        let duration = MonotonicClock.now() - start
        let report = CalloutReport(
            kind: kind, mode: mode, threadName: threadName, startNanoseconds: start, durationNanoseconds: duration,
            origin: origin()?.calloutOrigin)
        snapshot.monitor?.runLoop(self, didFinish: report)
        snapshot.tracer?.runLoop(self, didFinish: report)
    }

    /// Tells the mode's observers of `activity`, in order (S-OBS-2). Works
    /// on a copy of the list, so observers may add and remove anything,
    /// themselves included, without skipping others (S-OBS-3).
    // Inlined up to the check: most passes have no observer of most activities.
    @inline(__always)
    private func notify(_ activity: Activity, _ snapshot: inout ModeSnapshot, mode: Mode) {
        refresh(&snapshot, mode: mode)
        guard snapshot.observedActivities.contains(activity) else { return }
        tellObservers(activity, snapshot, mode: mode)
    }

    @inline(never)
    private func tellObservers(_ activity: Activity, _ snapshot: ModeSnapshot, mode: Mode) {
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
    @inlinable
    package var isStopPending: Bool { stopRequested.load(ordering: .relaxed) }

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

    /// Step 9, second half: one socket source event per pass (S-SRC1-1),
    /// from the front of the ready list. For a port, one event is a batch
    /// of up to its `maxMessagesPerCallout` messages, exactly one in a run
    /// with returnAfterSourceHandled.
    /// An auxiliary source (the ports' network reader) is not an event of
    /// its own: the ports it handed messages to are handled in the same
    /// pass, as they would be had their own sockets woken the loop. At most
    /// one auxiliary callout comes first; a second ends the step.
    private func handleOneSocketSource(_ snapshot: inout ModeSnapshot, mode: Mode, returnAfterSourceHandled: Bool) -> Bool {
        var auxiliaryHandled = false
        while !isStopPending, let source = waiter.readyList.takeNext(snapshot, of: self) {
            let batch = CalloutBatch(
                limit: returnAfterSourceHandled ? 1 : .max, loop: self, source: source, mode: mode, snapshotVersion: snapshot.version)
            var outcome = CalloutBatch.Outcome(handled: false, drained: false)
            callout(.socketSource, snapshot, mode: mode) { outcome = source.handle(batch) }
            // A port whose queue ran dry was re-armed by that empty receive: no
            // need to ask it again before sleeping (one empty receive a message).
            if outcome.drained { waiter.readyList.forgetDrained(source) }
            guard source.isAuxiliary && !auxiliaryHandled && !outcome.handled else { return outcome.handled }
            auxiliaryHandled = true
        }
        return false
    }
}
