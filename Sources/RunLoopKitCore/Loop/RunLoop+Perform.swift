/// Blocks and perform requests (S-BLK-1 to S-BLK-5): code queued onto the
/// loop's thread from any thread.
extension RunLoop {
    /// Queues `block` to run on the loop's thread in any common mode, and
    /// wakes the loop (S-BLK-1). Any thread; never blocks. Blocks queued from
    /// one thread run in that order (S-BLK-4). Running one counts as a handled
    /// source (S-BLK-5).
    ///
    /// - Parameters:
    ///   - tag: a name for the block that a `RunLoopMonitor` sees in
    ///     `CalloutReport.origin`, beside `file` and `line`; nil for none.
    ///     Free while no monitor is set.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - block: the work, run once on the loop's thread.
    /// - Returns: false if the loop's thread has exited; the block will not run.
    @discardableResult
    public func perform(
        tag: String? = nil, file: StaticString = #fileID, line: UInt = #line,
        _ block: @escaping @Sendable () -> Void
    ) -> Bool {
        enqueue(PendingBlock(modes: .common, body: block, discarded: nil, origin: BlockOrigin(tag: tag, file: file, line: line)))
    }

    /// Queues `block` to run on the loop's thread while it runs one of
    /// `modes` (`.common` accepted), and wakes the loop (S-BLK-1). Any
    /// thread; never blocks.
    ///
    /// Foundation's label (`perform(inModes:block:)`); a trailing closure
    /// reads the same.
    ///
    /// - Parameters:
    ///   - modes: the modes the block may run in (`.common` accepted).
    ///   - tag: a name for the block that a `RunLoopMonitor` sees in
    ///     `CalloutReport.origin`, beside `file` and `line`; nil for none.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - block: the work, run once on the loop's thread.
    /// - Returns: false if the loop's thread has exited; the block will not run.
    @discardableResult
    public func perform(
        inModes modes: [Mode], tag: String? = nil, file: StaticString = #fileID, line: UInt = #line,
        block: @escaping @Sendable () -> Void
    ) -> Bool {
        enqueue(PendingBlock(
            modes: ModeSelector(modes), body: block, discarded: nil, origin: BlockOrigin(tag: tag, file: file, line: line)))
    }

    /// Queues `block` with Foundation's performer order (NSRunLoop
    /// `perform(_:target:argument:order:modes:)`, with a block for the
    /// selector): it runs on the loop's thread at the next block step of a
    /// run in one of `modes` (`.common` accepted), before every waiting
    /// block of a higher order; blocks of equal order, and plain performs
    /// (order 0), run in the order queued (S-BLK-4). Wakes the loop, and
    /// counts as a handled source, as every perform does (S-BLK-1, S-BLK-5).
    /// Any thread; never blocks.
    ///
    /// ```swift
    /// loop.perform(order: 10, inModes: [.default]) { print("second") }
    /// loop.perform(order: 1, inModes: [.default]) { print("first") }
    /// ```
    ///
    /// - Parameters:
    ///   - order: lower runs first; may be negative.
    ///   - modes: the modes the block may run in (`.common` accepted).
    ///   - tag: names the block for `cancelPerformRequests(tag:)` and for a
    ///     `RunLoopMonitor`'s `CalloutReport.origin`; nil for none.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - block: the work, run once on the loop's thread.
    /// - Returns: the request, whose `cancel()` withdraws the block until it
    ///   starts (NSRunLoop `cancelPerform(_:target:argument:)`); nil if the
    ///   loop's thread has exited, and the block will not run.
    @discardableResult
    public func perform(
        order: Int, inModes modes: [Mode], tag: String? = nil, file: StaticString = #fileID, line: UInt = #line,
        block: @escaping @Sendable () -> Void
    ) -> PerformRequest? {
        let request = PerformRequest()
        let accepted = enqueue(PendingBlock(
            modes: .ordered(OrderedBlock(modes: ModeSelector(modes), order: order, request: request)), body: block,
            discarded: nil, origin: BlockOrigin(tag: tag, file: file, line: line)))
        return accepted ? request : nil
    }

    /// Runs `body` on the loop's thread and waits for its result or error
    /// (S-BLK-2). Any thread; blocks the caller until the block has run (or
    /// the timeout). On the loop's own thread it runs at once, as a plain
    /// call: not a callout, so no monitor hears of it.
    ///
    /// - Parameters:
    ///   - modes: the modes the block may run in (`.common` accepted).
    ///   - timeout: how long to wait, nil for as long as the loop lives. The
    ///     block may still run after a timeout.
    ///   - tag: a name for the block that a `RunLoopMonitor` sees in
    ///     `CalloutReport.origin`, beside `file` and `line`; nil for none.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - body: the work, run once on the loop's thread; its result or
    ///     error comes back to the caller.
    /// - Throws: what `body` throws; `RunLoopError.loopGone` if the loop's
    ///   thread has exited or exits before running it;
    ///   `RunLoopError.timedOut` after `timeout`; `.invalidInterval` for a
    ///   negative timeout.
    public func performAndWait<T: Sendable>(
        inModes modes: [Mode] = [.common],
        timeout: Duration? = nil,
        tag: String? = nil, file: StaticString = #fileID, line: UInt = #line,
        _ body: @escaping @Sendable () throws -> T
    ) throws -> T {
        if isOwnedByCurrentThread { return try body() }
        return try enqueueAndWait(
            modes: ModeSelector(modes), timeout: timeout, origin: BlockOrigin(tag: tag, file: file, line: line),
            waitingFor: "performAndWait on the run loop of '\(threadName)'", body)
    }

    /// Queues `body` and blocks until it ran (its result or error), the
    /// loop discarded it (`.loopGone`), or `timeout` passed (`.timedOut`):
    /// what `RunLoop.performAndWait` and `LoopThread.performAndWait` share.
    /// `wrap` lets a LoopThread wrap the block as it wraps every task.
    func enqueueAndWait<T: Sendable>(
        modes: ModeSelector, timeout: Duration?, origin: BlockOrigin, waitingFor operation: String,
        wrap: (@escaping @Sendable () -> Void) -> @Sendable () -> Void = { $0 },
        _ body: @escaping @Sendable () throws -> T
    ) throws -> T {
        let deadline = try timeout.map { (timeout) throws(RunLoopError) in
            try MonotonicClock.instant(after: timeout, "performAndWait timeout")
        } ?? MonotonicClock.never
        let completion = Completion<T>()
        let name = threadName
        let accepted = enqueue(PendingBlock(
            modes: modes,
            body: wrap({ completion.fill(Result { try body() }) }),
            discarded: { error in completion.fill(.failure(error)) },
            origin: origin
        ))
        guard accepted else { throw RunLoopError.loopGone(threadName: name) }
        guard let result = completion.wait(until: deadline) else {
            throw RunLoopError.timedOut(TimeoutError(operation: operation, limit: timeout))
        }
        return try result.get()
    }

    /// Runs `block` on this loop after `delay` seconds, while it runs one of
    /// `modes` (S-BLK-3): a one-shot timer, as performSelector:afterDelay: is.
    /// Cancel it with the returned timer's `invalidate()`, or all requests of
    /// a tag with `cancelPerformRequests(tag:)`. Any thread; never blocks.
    ///
    /// - Parameters:
    ///   - delay: seconds from now, on the loop's clock (S-TMR-7).
    ///   - modes: the modes the timer fires in (`.common` accepted).
    ///   - tag: names the request for `cancelPerformRequests(tag:)`, and for
    ///     a `RunLoopMonitor`: the timer's `CalloutReport.origin` carries it,
    ///     with `file` and `line`.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - block: the work, run once on the loop's thread.
    /// - Throws: `RunLoopError.invalidInterval` for a negative, NaN or infinite delay.
    @discardableResult
    public func perform(
        afterDelay delay: TimeInterval,
        inModes modes: [Mode] = [.default],
        tag: String? = nil,
        file: StaticString = #fileID, line: UInt = #line,
        _ block: @escaping @Sendable () -> Void
    ) throws(RunLoopError) -> Timer {
        try RunLoopError.validate(delay, "perform(afterDelay:) delay")
        let origin = BlockOrigin(tag: tag, file: file, line: line)
        let timer = try Timer(timeInterval: delay, repeats: false, on: clock, origin: origin) { [weak self] timer in
            if let tag { self?.forgetDelayedPerform(timer, tag: tag) }
            block()
        }
        if let tag { state.withLock { $0.delayedPerforms[tag, default: []].append(timer) } }
        for mode in modes { add(timer, forMode: mode) }
        return timer
    }

    /// Cancels everything queued with `tag` that has not started: delayed
    /// performs (cancelPreviousPerformRequests) and queued blocks alike
    /// (`perform`, `perform(order:inModes:…)`, `performAndWait`, a
    /// LoopThread's tasks). A block in progress finishes. Whoever waits for
    /// a cancelled block (`performAndWait`, `performAndAwait`) gets
    /// `RunLoopError.cancelled`; a cancelled block's `PerformRequest` reads
    /// `isCancelled`. Any thread; never blocks on the loop.
    public func cancelPerformRequests(tag: String) {
        let (timers, blocks) = state.withLock { state in
            let timers = state.delayedPerforms.removeValue(forKey: tag) ?? []
            let blocks = state.blocks.removeAll(tagged: tag)
            if !blocks.isEmpty { pendingBlockCount.wrappingSubtract(blocks.count, ordering: .releasing) }
            return (timers, blocks)
        }
        for timer in timers { timer.invalidate() }
        // Outside the lock: whoever waits is told (user code may run there).
        for block in blocks {
            // A block whose request was cancelled already, or that the loop
            // took between, is not this call's.
            if let request = block.request, !request.cancel() { continue }
            block.discarded?(.cancelled(tag: tag, threadName: threadName))
        }
    }

    private func forgetDelayedPerform(_ timer: Timer, tag: String) {
        state.withLock { state in
            state.delayedPerforms[tag]?.removeAll { $0 === timer }
            if state.delayedPerforms[tag]?.isEmpty == true { state.delayedPerforms[tag] = nil }
        }
    }

    /// Queues a block and wakes the loop; false if the loop's thread has exited.
    func enqueue(_ block: PendingBlock) -> Bool {
        let accepted: Bool = state.withLock { state in
            guard state.isAlive else { return false }
            state.blocks.append(block)
            pendingBlockCount.wrappingAdd(1, ordering: .releasing)
            return true
        }
        if accepted { wakeUp() }
        return accepted
    }

    /// The modes the loop's executor runs its jobs in, for jobs queued after.
    func setJobModes(_ modes: ModeSelector) {
        state.withLock { $0.blocks.jobModes = modes }
    }

    /// Queues a job of the loop's serial executor (an actor's) in the
    /// executor's modes and wakes the loop; false if the loop's thread has
    /// exited (decided under the same lock as the thread's last drain of
    /// jobs, S-EXEC-1).
    func enqueueJob(_ job: UnownedJob, executor: UnownedSerialExecutor) -> Bool {
        enqueueJob(PendingBlock(job: job, asTaskJob: false)) { $0.serial = executor }
    }

    /// The same for a job of the loop's task executor (S-EXEC-2).
    func enqueueTaskJob(_ job: UnownedJob, executor: UnownedTaskExecutor) -> Bool {
        enqueueJob(PendingBlock(job: job, asTaskJob: true)) { $0.task = executor }
    }

    private func enqueueJob(_ job: PendingBlock, setExecutor: (inout LoopState.JobExecutors) -> Void) -> Bool {
        let accepted: Bool = state.withLock { state in
            guard state.isAlive else { return false }
            setExecutor(&state.jobExecutors)
            state.blocks.append(job)
            pendingBlockCount.wrappingAdd(1, ordering: .releasing)
            return true
        }
        if accepted { wakeUp() }
        return accepted
    }

    /// Whether a block waits for `mode`: it keeps the mode from being empty (S-RUN-1).
    func hasBlocks(for mode: Mode, isCommon: Bool) -> Bool {
        // Loop thread only (a run's), so the taken blocks may be read.
        if takenBlocks.contains(where: { $0.modes.matches(mode, isCommon: isCommon) }) { return true }
        guard pendingBlockCount.load(ordering: .acquiring) > 0 else { return false }
        return state.withLock { $0.blocks.containsBlock(for: mode, isCommon: isCommon) }
    }
}
