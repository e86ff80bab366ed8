internal import CLinuxSupport

/// Sleeping: step 8 of S-RUN-2, the wait on the mode's wait set.
extension RunLoop {
    /// Whether the mode still has something to wait for, read again: a
    /// callout of this pass may have emptied it from the loop's own thread,
    /// which does not wake the loop, so sleeping would wait for nothing
    /// (S-RUN-2 steps 7 and 8). One load when nothing changed.
    @inline(__always)
    func stillHasWork(_ snapshot: inout ModeSnapshot, mode: Mode) -> Bool {
        refresh(&snapshot, mode: mode)
        return hasWork(snapshot, mode: mode)
    }

    /// Step 8: one wait on the mode's wait set, blocking or only looking,
    /// woken by the earlier of the mode's next timer (within its
    /// tolerance; on the real clock only) and `deadline` (real monotonic
    /// nanoseconds, or never).
    func waitForEvents(_ snapshot: inout ModeSnapshot, mode: Mode, deadline: UInt64, block: Bool) {
        // A beforeWaiting observer may just have added or moved a timer, or
        // emptied the mode: a run of an empty mode ends, it does not sleep.
        refresh(&snapshot, mode: mode)
        var block = block && hasWork(snapshot, mode: mode)
        var timerWake = MonotonicClock.never
        if snapshot.hasTimers && snapshot.clock.isReal {
            if let wake = snapshot.timerSchedule.wake(ifReadAt: timerChanges.load(ordering: .acquiring)) {
                timerWake = wake
            } else {
                timerWake = readTimerWake(&snapshot, mode: mode)
            }
        } else if snapshot.hasTimers && testClockTimerIsDue(snapshot, mode: mode) {
            // A test clock's timer that is due already (its date was set in
            // the past, or a callout advanced the clock): the timerfd cannot
            // stand for it, so look without sleeping, and fire it at step 9.
            block = false
        }
        let sources = snapshot.socketSources
        waiter.wait(in: snapshot.waitSet, wakeInstant: min(deadline, timerWake), block: block) { token in
            if _slowPath(token == WaitSet.mainQueueToken) { return mainQueue?.eventfdWasReady() ?? () }
            // The snapshot knows a mode's few sources; one added while the
            // loop slept, or one of many, is looked up in the loop's state.
            // One removed meanwhile may still be reported: the ready list
            // drops it when it finds it is no longer in the mode.
            if let source = ModeSnapshot.socketSource(withToken: token, in: sources) ?? registeredSource(token) {
                source.descriptorReported.store(true, ordering: .relaxed)
                waiter.readyList.append(source)
            }
        }
    }

    // Out of line, what a wait seldom needs (see `drainMainQueue`).

    /// The mode's next timer wake-up, read under the lock and kept in the
    /// snapshot until the timers change.
    @inline(never)
    private func readTimerWake(_ snapshot: inout ModeSnapshot, mode: Mode) -> UInt64 {
        state.withLock { state in
            let wake = state.withExistingMode(mode) { $0.timers.wakeInstant() } ?? MonotonicClock.never
            snapshot.timerSchedule.keep(wake: wake, readAt: timerChanges.load(ordering: .relaxed))
            return wake
        }
    }

    @inline(never)
    private func testClockTimerIsDue(_ snapshot: ModeSnapshot, mode: Mode) -> Bool {
        state.withLock({ $0.withExistingMode(mode) { $0.timers.settledEarliest() } ?? MonotonicClock.never }) <= snapshot.clock.now()
    }

    @inline(never)
    private func registeredSource(_ token: UInt64) -> SocketSource? {
        state.withLock { $0.registeredSockets[token] }
    }
}
