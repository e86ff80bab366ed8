import Glibc
import Logging
import Synchronization

/// A named thread that owns a running loop and stays alive until stopped:
/// the seeds' keep-alive thread, done right (S-KEEP-1, S-KEEP-2).
///
/// ```swift
/// let worker = LoopThread(name: "worker")
/// try worker.start()                      // returns once the loop is ready
/// try worker.perform { print("on", LoopThread.currentName ?? "?") }
/// let sum = try worker.performAndWait { 1 + 2 }   // waitUntilDone, with the result
/// worker.stop()                           // finishes the task in progress, joins
/// ```
///
/// The thread carries its name at the OS level too (`ps -L`, `top -H`, gdb;
/// Linux keeps 15 bytes) and in every diagnostic (S-THR-5). Its loop runs the
/// default mode, kept alive by an internal source; tasks run in the common
/// modes, in the order they were submitted from any one thread.
///
/// Threading: every method may be called from any thread, the loop thread
/// included. `start()` blocks until the loop is ready. `stop()` lets the task
/// in progress finish, discards what is still queued (waiters get
/// `RunLoopError.loopGone`), ends the loop and joins the thread; called
/// from the loop thread itself it returns at once and the thread ends after
/// the current task. `stopAfterDraining()` first runs what is already queued
/// (Android's quitSafely). Stopping is idempotent; a stopped thread cannot
/// be restarted. Dropping the last reference stops the thread, and the thread
/// keeps no reference to the LoopThread, nor to a task after running it, so
/// the seeds' retain cycle cannot be written.
public final class LoopThread: Sendable {
    public let name: String
    private let core: LoopThreadCore

    /// A thread named `name` (Linux shows its first 15 bytes), not yet started.
    public init(name: String) {
        self.name = name
        core = LoopThreadCore(name: name, clock: nil)
    }

    /// A thread whose loop measures its timers, `perform(afterDelay:)` and
    /// run deadlines on `clock`, a manual clock that tests advance (S-TMR-7).
    public init(name: String, clock: TestClock) {
        self.name = name
        core = LoopThreadCore(name: name, clock: clock)
    }

    deinit { core.stop(draining: false, fromDeinit: true) }

    /// Starts the thread and returns once its loop is ready.
    /// - Throws: `RunLoopError.alreadyStarted`, `.cannotRestart` after a
    ///   stop, or `.startFailed` if the system refuses a thread or the loop's fds.
    public func start() throws(RunLoopError) { try core.start() }

    /// The thread's loop while it runs; nil before `start()` and after stop.
    public var runLoop: RunLoop? { core.runningLoop }

    public var isRunning: Bool { core.runningLoop != nil }

    /// The kernel thread id while it runs (what `ps -L` shows).
    public var threadID: Int32? { core.threadID }

    /// The name of the calling thread if it is a LoopThread's, else nil.
    public static var currentName: String? {
        // Only looks: asking must not give a plain thread a loop (S-THR-1).
        guard let loop = RunLoop.existingForCurrentThread, loop.isLoopThreadLoop else { return nil }
        return loop.threadName
    }

    /// Queues `task` to run on the thread, without waiting. Never blocks.
    /// - Throws: `RunLoopError.notStarted` before `start()`, `.loopGone`
    ///   after `stop()`. (`RunLoop.perform` says the same with a false
    ///   result, as Foundation's shape asks; one meaning, two idioms.)
    public func perform(_ task: @escaping @Sendable () -> Void) throws(RunLoopError) {
        let loop = try core.loopAcceptingTasks()
        guard loop.enqueue(PendingBlock(modes: .common, body: core.wrap(task, on: loop), discarded: nil)) else {
            throw .loopGone(threadName: name)
        }
    }

    /// Runs `task` on the thread and waits for its result or error
    /// (performSelector:onThread:waitUntilDone: YES). Called on the thread
    /// itself, it runs the task at once.
    ///
    /// - Parameter timeout: how long to wait, nil to wait as long as the thread lives.
    /// - Throws: what `task` throws; `RunLoopError.notStarted`, `.loopGone`
    ///   (also if the thread stops before the task ran), `.timedOut`, or
    ///   `.invalidInterval` for a negative timeout.
    public func performAndWait<T: Sendable>(
        timeout: Duration? = nil, _ task: @escaping @Sendable () throws -> T
    ) throws -> T {
        let loop = try core.loopAcceptingTasks()
        if loop.isOwnedByCurrentThread { return try task() }
        let deadline = try timeout.map { (timeout) throws(RunLoopError) in
            try MonotonicClock.instant(after: timeout, "performAndWait timeout")
        } ?? MonotonicClock.never
        let completion = Completion<T>()
        let name = self.name
        let accepted = loop.enqueue(PendingBlock(
            modes: .common,
            body: core.wrap({ completion.fill(Result { try task() }) }, on: loop),
            discarded: { completion.fill(.failure(RunLoopError.loopGone(threadName: name))) }
        ))
        guard accepted else { throw RunLoopError.loopGone(threadName: name) }
        guard let result = completion.wait(until: deadline) else {
            throw RunLoopError.timedOut(TimeoutError(operation: "performAndWait on LoopThread '\(name)'", limit: timeout))
        }
        return try result.get()
    }

    /// Cocoa's shape: `waitUntilDone` true waits for the task and rethrows
    /// its error; false queues it and returns.
    public func perform(waitUntilDone: Bool, _ task: @escaping @Sendable () throws -> Void) throws {
        if waitUntilDone {
            try performAndWait(task)
        } else {
            let name = self.name
            try perform {
                do { try task() } catch { LoopThreadCore.logger.error("task on LoopThread '\(name)' threw: \(error)") }
            }
        }
    }

    /// Runs `task` on the thread and awaits its result or error, without
    /// blocking the caller's thread.
    /// - Throws: what `task` throws, or `RunLoopError.notStarted` / `.loopGone`.
    public func performAndAwait<T: Sendable>(_ task: @escaping @Sendable () throws -> T) async throws -> T {
        let loop = try core.loopAcceptingTasks()
        let name = self.name
        return try await withCheckedThrowingContinuation { continuation in
            let accepted = loop.enqueue(PendingBlock(
                modes: .common,
                body: core.wrap({ continuation.resume(with: Result { try task() }) }, on: loop),
                discarded: { continuation.resume(throwing: RunLoopError.loopGone(threadName: name)) }
            ))
            if !accepted { continuation.resume(throwing: RunLoopError.loopGone(threadName: name)) }
        }
    }

    /// Lets the task in progress finish, discards the queued ones, ends the
    /// loop and joins the thread. Idempotent; any thread.
    public func stop() { core.stop(draining: false, fromDeinit: false) }

    /// Runs every task already queued, then stops as `stop()` does. Tasks
    /// submitted after this call are refused with `RunLoopError.loopGone`.
    public func stopAfterDraining() { core.stop(draining: true, fromDeinit: false) }
}

/// What the thread itself shares with its `LoopThread` handle. The thread
/// holds this, never the handle, so that dropping the handle stops it.
final class LoopThreadCore: @unchecked Sendable {
    // @unchecked Sendable: mutable state is guarded by `lock`, or atomic.
    enum State {
        case created, starting, running(RunLoop), stopping, stopped
    }

    static let logger = Logger(label: "RunLoopKit.LoopThread")

    let name: String
    /// The loop's test clock, or nil for the real clock (S-TMR-7).
    let clock: TestClock?
    let quitRequested = Atomic<Bool>(false)
    private let ready = Completion<RunLoop>()

    /// Serialises start and stop from threads other than the loop thread.
    private let lifecycleLock = Lock()
    private let lock = Lock()
    // Guarded by lock.
    private var state = State.created
    // Guarded by lock.
    private var thread: pthread_t?
    // Guarded by lock.
    private var tid: Int32?
    // Guarded by lock.
    private var joinedOrDetached = false

    init(name: String, clock: TestClock?) {
        self.name = name
        self.clock = clock
    }

    var runningLoop: RunLoop? {
        lock.withLock {
            if case let .running(loop) = state { return loop }
            return nil
        }
    }

    var threadID: Int32? {
        lock.withLock {
            if case .running = state { return tid }
            return nil
        }
    }

    func loopAcceptingTasks() throws(RunLoopError) -> RunLoop {
        try lock.withLock { () throws(RunLoopError) -> RunLoop in
            switch state {
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
            try lock.withLock { () throws(RunLoopError) -> Void in
                switch state {
                case .created: state = .starting
                case .starting, .running: throw .alreadyStarted(threadName: name)
                case .stopping, .stopped: throw .cannotRestart(threadName: name)
                }
            }
            var handle = pthread_t()
            let context = Unmanaged.passRetained(self).toOpaque()
            let rc = pthread_create(&handle, nil, { context in
                Unmanaged<LoopThreadCore>.fromOpaque(context!).takeRetainedValue().threadMain()
                return nil
            }, context)
            guard rc == 0 else {
                Unmanaged<LoopThreadCore>.fromOpaque(context).release()
                lock.withLock { state = .stopped }
                throw .startFailed(threadName: name, reason: "pthread_create: \(String(cString: strerror(rc)))")
            }
            lock.withLock { thread = handle }
            switch ready.wait() {
            case let .success(loop)?:
                lock.withLock { state = .running(loop) }
            case let .failure(error)?:
                pthread_join(handle, nil)
                lock.withLock { state = .stopped; joinedOrDetached = true }
                throw .startFailed(threadName: name, reason: "\(error)")
            case nil:
                preconditionFailure("unreachable: waiting without a deadline")
            }
        }
    }

    private func threadMain() {
        ThreadIdentity.setCurrentName(name)
        let loop: RunLoop
        do {
            loop = try RunLoop.forCurrentThread(named: name)
        } catch {
            ready.fill(.failure(error))
            return
        }
        loop.isLoopThreadLoop = true
        if let clock { loop.use(clock) }
        // Never signalled: it only keeps the default mode from being empty.
        let keepAlive = CustomSource(order: .max) {}
        loop.add(keepAlive, forMode: .common)
        lock.withLock { tid = ThreadIdentity.currentTID }
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
        let onLoopThread = lock.withLock { tid != nil && tid == ThreadIdentity.currentTID }
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
        let loop: RunLoop? = lock.withLock {
            switch state {
            case let .running(loop):
                state = .stopping
                return loop
            case .created:
                state = .stopped
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
            }, discarded: nil))
            if accepted { return }
        }
        quitRequested.store(true, ordering: .releasing)
        loop.stop()
    }

    private func join() {
        let handle: pthread_t? = lock.withLock {
            guard !joinedOrDetached, let thread else { return nil }
            joinedOrDetached = true
            return thread
        }
        if let handle { pthread_join(handle, nil) }
        lock.withLock { if case .stopping = state { state = .stopped } }
    }

    private func detach() {
        lock.withLock {
            guard !joinedOrDetached, let thread else { return }
            joinedOrDetached = true
            pthread_detach(thread)
        }
    }
}
