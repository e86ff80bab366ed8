/// A LoopThread is a serial executor (S-EXEC-1): an actor that returns
/// the thread's `asUnownedSerialExecutor()` from its `unownedExecutor`
/// runs only on that thread, between the loop's other work.
///
/// ```swift
/// actor Counter {
///     let worker: LoopThread
///     nonisolated var unownedExecutor: UnownedSerialExecutor { worker.asUnownedSerialExecutor() }
///     var count = 0
///     init(on worker: LoopThread) { self.worker = worker }
///     func increment() -> Int { count += 1; return count }   // runs on the worker's thread
/// }
/// ```
///
/// Each job (a slice of an actor method or task between two suspension
/// points) waits in the loop's queue beside the blocks of `perform`, in the
/// order both came, whatever the job's priority, and runs when the loop
/// runs one of `executorModes` (the common modes by default): one job at a
/// time, also when a job runs the loop nested (that nested run runs blocks,
/// timers and sources, but no other job of this executor). A pass that ran
/// a job counted as having handled a source; a monitor sees a job as a
/// `.job` callout.
///
/// Around start and stop: the thread must be started before the executor
/// gets its first job (a job before `start()` traps, saying so). `stop()`
/// discards queued blocks but runs every queued job, and the jobs those
/// queue, until none is left, then marks the thread dead under the same
/// lock that queues jobs: a job queued after that (a continuation of an
/// actor method that was suspended when the thread stopped, say) traps,
/// naming the thread, rather than being lost with its task waiting forever.
extension LoopThread: SerialExecutor {
    /// Queues `job` on the thread's loop. Called by the Swift runtime; any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        guard let loop = core.executorLoop.load() else {
            fatalError("LoopThread '\(name)' was given a Swift concurrency job before start(): start it before an actor or task uses it as its executor")
        }
        guard loop.enqueueJob(job, executor: asUnownedSerialExecutor()) else {
            fatalError("LoopThread '\(name)' was given a Swift concurrency job after it stopped: its thread has ended, and the job's task could never resume. Stop a LoopThread only once the actors it runs are done with it")
        }
    }

    /// The executor, unowned, for an actor's `unownedExecutor`.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Traps unless called on the thread: what `assumeIsolated` asks of an
    /// actor pinned to this thread when it is called outside one of its
    /// jobs (from a perform block or a timer on the thread, it succeeds).
    public func checkIsolated() {
        precondition(isCurrentThread, "not on LoopThread '\(name)': the code assumed the isolation of an actor whose executor is this thread")
    }

    /// Whether the calling thread is this LoopThread's, while it runs.
    public func isIsolatingCurrentContext() -> Bool? {
        isCurrentThread
    }

    /// The modes the thread's loop runs this executor's jobs in, `.common`
    /// (the default) standing for the common modes: a job for a mode of
    /// your own waits while the loop runs other modes, as a task does
    /// (`perform(inModes:)`). Any thread; applies to jobs queued after.
    /// Before `start()`, the value applies from the start.
    public var executorModes: [RunLoop.Mode] {
        get { core.executorModes.withLock { $0 } }
        set {
            core.executorModes.withLock { $0 = newValue }
            core.executorLoop.load()?.setJobModes(ModeSelector(newValue))
        }
    }

    private var isCurrentThread: Bool {
        guard let loop = core.executorLoop.load() else { return false }
        return loop.isOwnedByCurrentThread
    }
}
