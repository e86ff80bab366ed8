/// Teardown at thread exit (S-THR-3): everything the loop holds is released
/// on its own thread, and every later add or perform is refused.
extension RunLoop {
    /// Releases everything the loop holds; on the loop's thread, at its exit.
    /// Queued jobs of the loop's executor run first (a job has no discarded
    /// path, S-EXEC-1), and those they queue, until none is left: the loop
    /// is marked dead under the lock that found no job, so that a later job
    /// is refused (and traps, naming the thread), never lost. `dead` runs
    /// right after that (the thread's slot emptied).
    func tearDown(dead: () -> Void = {}) {
        var departed: [(any ModeItem, Mode)] = []
        var jobs: [PendingBlock] = []
        var executors = LoopState.JobExecutors()
        var pending: [PendingBlock]?
        repeat {
            for job in jobs {
                if let (job, isTaskJob) = job.job { runJob(job, isTaskJob: isTaskJob, on: executors) }
            }
            (jobs, executors, pending) = tearDownUnlessJobsWait(&departed)
        } while !jobs.isEmpty
        dead()
        guard let pending else { return }
        waiter.close()
        for (item, mode) in departed { item.loopDidTearDown(self, mode: mode) }
        for block in pending { block.discarded?(.loopGone(threadName: threadName)) }
        dueTimers.removeAll()
        if !pending.isEmpty {
            logger.debug("run loop torn down at thread exit; \(pending.count) queued block(s) discarded")
        }
    }

    /// Under the lock: the queued jobs, if any, taken out to run; else the
    /// loop marked dead, its items in `departed` and its queued blocks
    /// returned to be discarded (nil if it was dead already).
    private func tearDownUnlessJobsWait(
        _ departed: inout [(any ModeItem, Mode)]
    ) -> ([PendingBlock], LoopState.JobExecutors, [PendingBlock]?) {
        state.withLock { state in
            guard state.isAlive else { return ([], LoopState.JobExecutors(), nil) }
            let jobs = state.blocks.removeJobs()
            if !jobs.isEmpty {
                pendingBlockCount.wrappingSubtract(jobs.count, ordering: .releasing)
                return (jobs, state.jobExecutors, [])
            }
            state.lifecycle = .tornDown(warned: false)
            for items in state.modes.states {
                departed += items.customSources.map { ($0, items.mode) }
                departed += items.timers.timers.map { ($0, items.mode) }
                departed += items.observers.map { ($0, items.mode) }
                departed += items.socketSources.map { ($0, items.mode) }
            }
            state.modes.removeAll()
            state.commonItems = ModeState(mode: .common, timerHeapID: LoopState.commonItemsHeapID)
            state.registeredSockets.removeAll()
            state.socketsToCheck.removeAll()
            state.delayedPerforms.removeAll()
            state.monitor = nil
            bumpItemsVersion()
            pendingBlockCount.store(0, ordering: .releasing)
            return ([], LoopState.JobExecutors(), state.blocks.removeAll())
        }
    }
}
