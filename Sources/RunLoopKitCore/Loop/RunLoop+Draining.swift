/// Steps 4 and 10 of a run (S-RUN-2): draining the queued blocks and jobs
/// (S-BLK-4, S-EXEC-1), taking plain blocks several at a time.
extension RunLoop {
    /// Step 4 and 10: runs the blocks queued for this mode, oldest first
    /// (S-BLK-4), and the executor's jobs among them in the same order
    /// (S-EXEC-1). Blocks queued while draining wait for the next pass, and a
    /// stop ends the drain after the block in progress. Returns whether any ran.
    ///
    /// Plain blocks at the head of the queue are taken up to
    /// `blocksTakenAtOnce` under one lock (`takenBlocks`) and run from
    /// there (a stop puts back those not run): with the lock taken for every
    /// block, against a thread that takes it for every perform, a flood
    /// across CPUs runs at whatever pace the two threads meet at the lock
    /// (docs/performance.md, "Perform, actors and the main queue").
    func drainBlocks(_ snapshot: inout ModeSnapshot, mode: Mode) -> Bool {
        // Most passes find no block: an atomic load instead of the lock.
        guard pendingBlockCount.load(ordering: .acquiring) > 0 || !takenBlocks.isEmpty else { return false }
        var ran = false
        var remaining = -1
        let isCommon = snapshot.isCommon
        // A run nested in a job runs no other job of the executor.
        let jobs = !jobRunning.load(ordering: .relaxed)
        while true {
            // Checked before each block: a stop that came during an earlier
            // callout of this pass must not start another (LoopThread.stop
            // discards the rest). Blocks taken and not run go back to the
            // queue's head, as if never taken.
            if isStopPending {
                putTakenBlocksBack()
                return ran
            }
            // Blocks taken earlier, by this drain or one it is nested in,
            // are older than any still queued.
            if !takenBlocks.isEmpty, let block = takeTakenBlock(matching: mode, isCommon: isCommon) {
                callout(.block, snapshot, mode: mode, origin: block.origin) { block.body() }
                ran = true
                continue
            }
            // Every block queued when the drain began was taken: no lock
            // just to find that out.
            if remaining == 0 {
                if !jobs { warnIfAJobWaits() }
                return ran
            }
            var executors = LoopState.JobExecutors()
            let next: PendingBlock? = state.withLock { state in
                if remaining < 0 { remaining = state.blocks.count }
                guard remaining > 0 else { return nil }
                // Nothing older is left behind (only the head is taken), so
                // the taken blocks run next, before any still queued.
                let taken = state.blocks.takePlainHead(matching: mode, isCommon: isCommon, limit: remaining,
                                                       room: Self.blocksTakenAtOnce, into: &takenBlocks)
                if taken > 0 {
                    remaining -= taken
                    pendingBlockCount.wrappingSubtract(taken, ordering: .releasing)
                    return nil
                }
                guard let block = state.blocks.popFirst(matching: mode, isCommon: isCommon, limit: remaining, jobs: jobs) else {
                    remaining = 0
                    return nil
                }
                remaining -= 1
                pendingBlockCount.wrappingSubtract(1, ordering: .releasing)
                if block.isJob { executors = state.jobExecutors }
                return block
            }
            guard let block = next else {
                if !takenBlocks.isEmpty { continue }
                if !jobs { warnIfAJobWaits() }
                return ran
            }
            if let (job, isTaskJob) = block.job {
                callout(.job, snapshot, mode: mode) { runJob(job, isTaskJob: isTaskJob, on: executors) }
            } else {
                // A block whose request was cancelled is dropped unrun; taking
                // it here makes a later `cancel()` return false.
                if let request = block.request, !request.begin() { continue }
                callout(.block, snapshot, mode: mode, origin: block.origin) { block.body() }
            }
            ran = true
        }
    }

    /// Puts the taken blocks back at the head of the queue, in their order:
    /// a stopped drain leaves the queue as a drain taking one block at a
    /// time would have, so the next run pops them as any queued block (an
    /// ordered block of a lower order queued meanwhile still goes first).
    private func putTakenBlocksBack() {
        guard !takenBlocks.isEmpty else { return }
        let count = takenBlocks.count
        state.withLock { state in
            state.blocks.putBackAtHead(takenBlocks)
            pendingBlockCount.wrappingAdd(count, ordering: .releasing)
        }
        takenBlocks.removeAll(keepingCapacity: true)
    }

    /// The oldest taken block that may run in `mode` (most often the
    /// first: a run nested in another mode is what skips any).
    private func takeTakenBlock(matching mode: Mode, isCommon: Bool) -> PendingBlock? {
        if takenBlocks[0].modes.matches(mode, isCommon: isCommon) { return takenBlocks.removeFirst() }
        var index = 1
        while index < takenBlocks.count {
            if takenBlocks[index].modes.matches(mode, isCommon: isCommon) { return takenBlocks.remove(at: index) }
            index += 1
        }
        return nil
    }

    /// How many plain blocks one lock takes (`drainBlocks`): enough that a
    /// flood's lock is taken a few times a wake-up, few enough that a
    /// sender waiting for the lock meanwhile waits only briefly.
    static let blocksTakenAtOnce = 32
}
