import Glibc
import Logging
import Synchronization

/// What the thread itself shares with its `LoopThread` handle. The thread
/// holds this, never the handle, so that dropping the handle stops it.
final class LoopThreadCore: Sendable {
    /// The thread's life: made, starting (start() waits for the loop),
    /// running, stopping (told to quit, not yet joined), stopped. A stopped
    /// thread never runs again (S-KEEP-1).
    enum Lifecycle {
        case created, starting, running(RunLoop), stopping, stopped
    }

    /// What start, stop and the thread itself share.
    struct State {
        var lifecycle = Lifecycle.created
        var thread: pthread_t?
        /// The kernel thread id, once the thread runs.
        var tid: Int32?
        /// Whether the pthread was joined or detached (exactly one of them, once).
        var joinedOrDetached = false
    }

    static let logger = Logger(label: "RunLoopKit.LoopThread")

    let name: String
    /// What the loop measures its timers on (S-TMR-7).
    let clock: LoopClock
    /// How the kernel schedules the thread, applied as it starts.
    let scheduling: LoopThread.Scheduling
    let quitRequested = Atomic<Bool>(false)
    private let ready = Completion<RunLoop>()
    /// The thread's loop, set once when it is ready and kept after it ends:
    /// what the executor enqueues on without any lock of its own (the
    /// loop's lock decides whether it still takes work, S-EXEC-1).
    let executorLoop = AtomicLazyReference<RunLoop>()
    /// `LoopThread.executorModes`, kept here so that a value set before
    /// `start()` applies from the start.
    let executorModes = Locked<[RunLoop.Mode]>([.common])

    /// Serialises start and stop from threads other than the loop thread;
    /// guards no state of its own.
    private let lifecycleLock = Lock()
    private let state = Locked(State())

    init(name: String, clock: LoopClock, scheduling: LoopThread.Scheduling) {
        self.name = name
        self.clock = clock
        self.scheduling = scheduling
    }

    /// Queues a job through `enqueue` on the thread's loop: only the loop's
    /// lock is taken, and the loop decides there whether it still takes
    /// work. A job before `start()` or after the thread ended traps, naming
    /// the thread (a job cannot be refused without its task hanging).
    func enqueue(_ job: UnownedJob, name: String, _ enqueue: (RunLoop, UnownedJob) -> Bool) {
        guard let loop = executorLoop.load() else {
            fatalError("LoopThread '\(name)' was given a Swift concurrency job before start(): start it before an actor or task uses it as its executor")
        }
        guard enqueue(loop, job) else {
            fatalError("LoopThread '\(name)' was given a Swift concurrency job after it stopped: its thread has ended, and the job's task could never resume. Stop a LoopThread only once the actors and tasks it runs are done with it")
        }
    }

    var runningLoop: RunLoop? {
        state.withLock {
            if case let .running(loop) = $0.lifecycle { return loop }
            return nil
        }
    }

    var threadID: Int32? {
        state.withLock {
            if case .running = $0.lifecycle { return $0.tid }
            return nil
        }
    }

    func loopAcceptingWork() throws(RunLoopError) -> RunLoop {
        try state.withLock { (state) throws(RunLoopError) -> RunLoop in
            switch state.lifecycle {
            case let .running(loop): return loop
            case .created, .starting: throw .notStarted(threadName: name)
            case .stopping, .stopped: throw .loopGone(threadName: name)
            }
        }
    }

    /// A task that, after running, re-issues a pending stop: a task that ran
    /// the loop again (S-RUN-8) may have consumed the stop meant for the
    /// thread's own run.
    func wrap(_ task: @escaping @Sendable () -> Void, on loop: RunLoop) -> @Sendable () -> Void {
        { [self] in
            task()
            if quitRequested.load(ordering: .acquiring) { loop.stop() }
        }
    }

    func start() throws(RunLoopError) {
        try lifecycleLock.withLock { () throws(RunLoopError) -> Void in
            try state.withLock { (state) throws(RunLoopError) -> Void in
                switch state.lifecycle {
                case .created: state.lifecycle = .starting
                case .starting, .running: throw .alreadyStarted(threadName: name)
                case .stopping, .stopped: throw .cannotRestart(threadName: name)
                }
            }
            var handle = pthread_t()
            // U-THREAD-START (docs/unsafe-sites.md).
            let context = Unmanaged.passRetained(self).toOpaque()
            let rc = pthread_create(&handle, nil, { context in
                Unmanaged<LoopThreadCore>.fromOpaque(context!).takeRetainedValue().threadMain()
                return nil
            }, context)
            guard rc == 0 else {
                Unmanaged<LoopThreadCore>.fromOpaque(context).release()
                state.withLock { $0.lifecycle = .stopped }
                throw .startFailed(threadName: name, reason: "pthread_create: \(String(cString: strerror(rc)))")
            }
            state.withLock { $0.thread = handle }
            switch ready.wait() {
            case let .success(loop)?:
                state.withLock { $0.lifecycle = .running(loop) }
            case let .failure(error)?:
                pthread_join(handle, nil)
                state.withLock { $0.lifecycle = .stopped; $0.joinedOrDetached = true }
                throw .startFailed(threadName: name, reason: "\(error)")
            case nil:
                preconditionFailure("unreachable: waiting without a deadline")
            }
        }
    }

    private func threadMain() {
        ThreadIdentity.setCurrentName(name)
        scheduling.applyToCurrentThread()
        let loop: RunLoop
        do {
            loop = try RunLoop.forCurrentThread(named: name)
        } catch {
            ready.fill(.failure(error))
            return
        }
        loop.isLoopThreadLoop = true
        if case let .manual(clock) = clock { loop.use(manualClock: clock) }
        // Never signalled: it only keeps the default mode from being empty.
        let keepAlive = CustomSource(order: .max) {}
        loop.add(keepAlive, forMode: .common)
        state.withLock { $0.tid = ThreadIdentity.currentTID }
        loop.setJobModes(ModeSelector(executorModes.withLock { $0 }))
        _ = executorLoop.storeIfNil(loop)
        ready.fill(.success(loop))
        while !quitRequested.load(ordering: .acquiring) {
            loop.run(mode: .default, seconds: .infinity)
        }
        keepAlive.invalidate()
        // Now, not at thread exit: whoever joins must find every fd closed
        // and every waiter answered.
        RunLoop.tearDownCurrentThreadLoop()
    }

    func stop(draining: Bool, fromDeinit: Bool) {
        let onLoopThread = state.withLock { $0.tid != nil && $0.tid == ThreadIdentity.currentTID }
        if onLoopThread {
            // Cannot join itself: the thread ends after the current task. If
            // the handle is going away, nobody will ever join it.
            beginStopping(draining: draining)
            if fromDeinit { detach() }
            return
        }
        // Waits for a start in progress, so that a thread being started is
        // stopped once it runs, never joined before it was told to quit.
        lifecycleLock.withLock {
            beginStopping(draining: draining)
            join()
        }
    }

    private func beginStopping(draining: Bool) {
        let loop: RunLoop? = state.withLock { state in
            switch state.lifecycle {
            case let .running(loop):
                state.lifecycle = .stopping
                return loop
            case .created:
                state.lifecycle = .stopped
                return nil
            case .starting, .stopping, .stopped:
                return nil
            }
        }
        if let loop { requestQuit(loop, draining: draining) }
    }

    private func requestQuit(_ loop: RunLoop, draining: Bool) {
        if draining {
            // Behind every task already queued.
            let accepted = loop.enqueue(PendingBlock(modes: .common, body: { [self] in
                quitRequested.store(true, ordering: .releasing)
                loop.stop()
            // Its origin is this line: a monitor sees the stop as a block of RunLoopKit's.
            }, discarded: nil, origin: BlockOrigin(tag: nil, file: #fileID, line: #line)))
            if accepted { return }
        }
        quitRequested.store(true, ordering: .releasing)
        loop.stop()
    }

    private func join() {
        let handle: pthread_t? = state.withLock { state in
            guard !state.joinedOrDetached, let thread = state.thread else { return nil }
            state.joinedOrDetached = true
            return thread
        }
        if let handle { pthread_join(handle, nil) }
        state.withLock { state in
            if case .stopping = state.lifecycle { state.lifecycle = .stopped }
        }
    }

    private func detach() {
        state.withLock { state in
            guard !state.joinedOrDetached, let thread = state.thread else { return }
            state.joinedOrDetached = true
            pthread_detach(thread)
        }
    }
}
