/// A LoopThread is a serial executor (S-EXEC-1): an actor that returns
/// the thread's `asUnownedSerialExecutor()` from its `unownedExecutor`
/// runs only on that thread, between the loop's other work. It is a task
/// executor too (S-EXEC-2): `withTaskExecutorPreference(worker) { … }` runs
/// nonisolated async code on the thread.
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
extension LoopThread: SerialExecutor, TaskExecutor {
    /// Queues `job` as a task job (S-EXEC-2): what the runtime calls for a
    /// task that prefers this thread (`withTaskExecutorPreference(worker)`).
    /// An actor's jobs come through `asUnownedSerialExecutor()`, which is
    /// the thread's serial side (`LoopThreadSerialExecutor`): the two
    /// protocols share this one requirement, so two objects are how a job
    /// keeps which way it came, and runs as such. Any thread.
    public func enqueue(_ job: consuming ExecutorJob) {
        core.enqueue(UnownedJob(job), name: name) { loop, job in
            loop.enqueueTaskJob(job, executor: asUnownedTaskExecutor())
        }
    }

    /// The thread's serial executor, unowned, for an actor's `unownedExecutor`.
    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        serialExecutor.asUnownedSerialExecutor()
    }

    /// The thread as a task executor, unowned.
    public func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// Traps unless called on the thread (see `LoopThreadSerialExecutor`).
    public func checkIsolated() { serialExecutor.checkIsolated() }

    /// Whether the calling thread is this LoopThread's, while it runs.
    public func isIsolatingCurrentContext() -> Bool? { serialExecutor.isIsolatingCurrentContext() }

    /// The modes the thread's loop runs its executors' jobs in, `.common`
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
}

/// A LoopThread's serial side (S-EXEC-1): what an actor pinned to the
/// thread gets from `asUnownedSerialExecutor()`. Its jobs are an actor's,
/// and run isolated to it; the LoopThread itself takes task jobs
/// (S-EXEC-2). Kept by the LoopThread, and keeping only its core (which
/// keeps nothing back), so that no cycle forms.
final class LoopThreadSerialExecutor: SerialExecutor {
    private let core: LoopThreadCore

    init(core: LoopThreadCore) { self.core = core }

    func enqueue(_ job: consuming ExecutorJob) {
        core.enqueue(UnownedJob(job), name: core.name) { loop, job in
            loop.enqueueJob(job, executor: asUnownedSerialExecutor())
        }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Traps unless called on the thread: what `assumeIsolated` asks of an
    /// actor pinned to this thread on a runtime that does not ask
    /// `isIsolatingCurrentContext` (from a perform block or a timer on the
    /// thread, it passes).
    func checkIsolated() {
        precondition(isCurrentThread, "not on LoopThread '\(core.name)': the code assumed the isolation of an actor whose executor is this thread")
    }

    func isIsolatingCurrentContext() -> Bool? { isCurrentThread }

    private var isCurrentThread: Bool {
        guard let loop = core.executorLoop.load() else { return false }
        return loop.isOwnedByCurrentThread
    }
}
