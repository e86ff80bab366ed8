import Glibc
import Logging
import Synchronization

/// A named thread that owns a running loop and stays alive until stopped:
/// the keep-alive thread of Apple's threading guide, done right (S-KEEP-1, S-KEEP-2).
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
/// the classic keep-alive retain cycle cannot be written.
public final class LoopThread: Sendable {
    /// The thread's name, as given; the OS shows its first 15 bytes (S-THR-5).
    public let name: String
    let core: LoopThreadCore
    /// The thread's serial executor, for actors (S-EXEC-1; LoopThread+Executor.swift).
    let serialExecutor: LoopThreadSerialExecutor

    /// A thread named `name` (Linux shows its first 15 bytes), not yet
    /// started, scheduled as the thread that starts it is (`Scheduling`).
    public convenience init(name: String) {
        self.init(name: name, scheduling: .inherited)
    }

    /// A thread named `name`, not yet started, which `scheduling` says how
    /// the kernel schedules.
    public init(name: String, scheduling: Scheduling) {
        self.name = name
        core = LoopThreadCore(name: name, clock: .real, scheduling: scheduling)
        serialExecutor = LoopThreadSerialExecutor(core: core)
    }

    /// A thread whose loop measures its timers, `perform(afterDelay:)` and
    /// run deadlines on `loopClock` (S-TMR-7): RunLoopKitTesting's
    /// `LoopThread(name:clock:)` passes a manual clock here.
    package init(name: String, loopClock: LoopClock) {
        self.name = name
        core = LoopThreadCore(name: name, clock: loopClock, scheduling: .inherited)
        serialExecutor = LoopThreadSerialExecutor(core: core)
    }

    deinit { core.stop(draining: false, fromDeinit: true) }

    /// Starts the thread and returns once its loop is ready.
    /// - Throws: `RunLoopError.alreadyStarted`, `.cannotRestart` after a
    ///   stop, or `.startFailed` if the system refuses a thread or the loop's fds.
    public func start() throws(RunLoopError) { try core.start() }

    /// The thread's loop, for work that needs one; throws as `perform` does.
    package func loopAcceptingWork() throws(RunLoopError) -> RunLoop { try core.loopAcceptingWork() }

    /// The thread's loop while it runs; nil before `start()` and after stop.
    public var runLoop: RunLoop? { core.runningLoop }

    /// True between a successful `start()` and `stop()`. Any thread.
    public var isRunning: Bool { core.runningLoop != nil }

    /// How the kernel schedules the thread (`Scheduling`).
    public var scheduling: Scheduling { core.scheduling }

    /// The kernel thread id while it runs (what `ps -L` shows).
    public var threadID: Int32? { core.threadID }

    /// The name of the calling thread if it is a LoopThread's, else nil.
    public static var currentName: String? {
        // Only looks: asking must not give a plain thread a loop (S-THR-1).
        guard let loop = RunLoop.existingForCurrentThread, loop.isLoopThreadLoop else { return nil }
        return loop.threadName
    }

    /// Queues `task` to run on the thread, without waiting. Any thread;
    /// never blocks.
    ///
    /// - Parameters:
    ///   - modes: the modes of the thread's loop the task may run in
    ///     (`.common`, the default, accepted): a task for a mode of your own
    ///     waits while the loop runs other modes (performSelector:onThread:
    ///     withObject:waitUntilDone:modes:).
    ///   - tag: a name for the task that a `RunLoopMonitor` on the thread's
    ///     loop sees in `CalloutReport.origin`, beside `file` and `line`; nil
    ///     for none. Free while no monitor is set.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - task: the work, run once on the thread.
    /// - Throws: `RunLoopError.notStarted` before `start()`, `.loopGone`
    ///   after `stop()`. (`RunLoop.perform` says the same with a false
    ///   result, as Foundation's shape asks; one meaning, two idioms.)
    public func perform(
        inModes modes: [RunLoop.Mode] = [.common],
        tag: String? = nil, file: StaticString = #fileID, line: UInt = #line,
        _ task: @escaping @Sendable () -> Void
    ) throws(RunLoopError) {
        let loop = try core.loopAcceptingWork()
        let queued = loop.enqueue(PendingBlock(
            modes: ModeSelector(modes), body: core.wrap(task, on: loop), discarded: nil,
            origin: BlockOrigin(tag: tag, file: file, line: line)))
        guard queued else { throw .loopGone(threadName: name) }
    }

    /// Queues `task` with Foundation's performer order, as
    /// `RunLoop.perform(order:inModes:tag:file:line:block:)` does on the
    /// thread's loop, and returns the request that can cancel it until it
    /// starts. Any thread; never blocks.
    ///
    /// - Parameters:
    ///   - order: lower runs first among the waiting tasks; equal orders run
    ///     in the order queued.
    ///   - modes: the modes of the thread's loop the task may run in
    ///     (`.common` accepted).
    ///   - tag: names the task for `RunLoop.cancelPerformRequests(tag:)` and
    ///     for a `RunLoopMonitor`; nil for none.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - task: the work, run once on the thread.
    /// - Returns: the request; `cancel()` withdraws the task until it starts.
    /// - Throws: `RunLoopError.notStarted` before `start()`, `.loopGone`
    ///   after `stop()`.
    @discardableResult
    public func perform(
        order: Int, inModes modes: [RunLoop.Mode] = [.common],
        tag: String? = nil, file: StaticString = #fileID, line: UInt = #line,
        _ task: @escaping @Sendable () -> Void
    ) throws(RunLoopError) -> PerformRequest {
        let loop = try core.loopAcceptingWork()
        let request = PerformRequest()
        let queued = loop.enqueue(PendingBlock(
            modes: .ordered(OrderedBlock(modes: ModeSelector(modes), order: order, request: request)),
            body: core.wrap(task, on: loop), discarded: nil, origin: BlockOrigin(tag: tag, file: file, line: line)))
        guard queued else { throw .loopGone(threadName: name) }
        return request
    }

    /// Runs `task` on the thread and waits for its result or error
    /// (performSelector:onThread:waitUntilDone: YES). Any thread; blocks the
    /// caller until the task has run (or the timeout). Called on the thread
    /// itself, it runs the task at once, as a plain call: not a callout, so
    /// no monitor hears of it.
    ///
    /// - Parameters:
    ///   - modes: the modes of the thread's loop the task may run in
    ///     (`.common`, the default, accepted).
    ///   - timeout: how long to wait, nil to wait as long as the thread lives.
    ///   - tag: a name for the task that a `RunLoopMonitor` sees in
    ///     `CalloutReport.origin`, beside `file` and `line`; nil for none.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - task: the work, run once on the thread; its result or error
    ///     comes back to the caller.
    /// - Throws: what `task` throws; `RunLoopError.notStarted`, `.loopGone`
    ///   (also if the thread stops before the task ran), `.timedOut`, or
    ///   `.invalidInterval` for a negative timeout.
    public func performAndWait<T: Sendable>(
        inModes modes: [RunLoop.Mode] = [.common],
        timeout: Duration? = nil,
        tag: String? = nil, file: StaticString = #fileID, line: UInt = #line,
        _ task: @escaping @Sendable () throws -> T
    ) throws -> T {
        let loop = try core.loopAcceptingWork()
        if loop.isOwnedByCurrentThread { return try task() }
        return try loop.enqueueAndWait(
            modes: ModeSelector(modes), timeout: timeout, origin: BlockOrigin(tag: tag, file: file, line: line),
            waitingFor: "performAndWait on LoopThread '\(name)'", wrap: { [core] in core.wrap($0, on: loop) }, task)
    }

    /// Cocoa's shape: `waitUntilDone` true waits for the task and rethrows
    /// its error (as `performAndWait`); false queues it and returns (as
    /// `perform`), and an error it throws is logged. Any thread.
    ///
    /// - Parameters:
    ///   - waitUntilDone: true to wait for the task and rethrow its error.
    ///   - modes: the modes of the thread's loop the task may run in
    ///     (`.common`, the default, accepted).
    ///   - tag: a name for the task that a `RunLoopMonitor` sees in
    ///     `CalloutReport.origin`, beside `file` and `line`; nil for none.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - task: the work, run once on the thread.
    public func perform(
        waitUntilDone: Bool, inModes modes: [RunLoop.Mode] = [.common],
        tag: String? = nil, file: StaticString = #fileID, line: UInt = #line,
        _ task: @escaping @Sendable () throws -> Void
    ) throws {
        if waitUntilDone {
            try performAndWait(inModes: modes, tag: tag, file: file, line: line, task)
        } else {
            let name = self.name
            try perform(inModes: modes, tag: tag, file: file, line: line) {
                do { try task() } catch { LoopThreadCore.logger.error("task on LoopThread '\(name)' threw: \(error)") }
            }
        }
    }

    /// Runs `task` on the thread and awaits its result or error, without
    /// blocking the caller's thread. Any thread or task.
    ///
    /// Cancelling the awaiting task ends the wait at once with
    /// `CancellationError` (S-ASYNC-1), as `Task.sleep` does: a task still
    /// queued is withdrawn and never runs; one that has started finishes on
    /// the thread, and its result is dropped. A task cancelled before the
    /// call queues nothing.
    ///
    /// - Parameters:
    ///   - modes: the modes of the thread's loop the task may run in
    ///     (`.common`, the default, accepted).
    ///   - tag: a name for the task that a `RunLoopMonitor` sees in
    ///     `CalloutReport.origin`, beside `file` and `line`; nil for none.
    ///   - file: the call site's `#fileID`; leave the default.
    ///   - line: the call site's `#line`; leave the default.
    ///   - task: the work, run once on the thread; its result or error
    ///     comes back to the awaiting caller.
    /// - Throws: what `task` throws, `CancellationError`, or
    ///   `RunLoopError.notStarted` / `.loopGone`.
    public func performAndAwait<T: Sendable>(
        inModes modes: [RunLoop.Mode] = [.common],
        tag: String? = nil, file: StaticString = #fileID, line: UInt = #line,
        _ task: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try Task.checkCancellation()
        let loop = try core.loopAcceptingWork()
        let name = self.name
        let outcome = ResumeOnce<T>()
        // Withdrawn if the awaiting task is cancelled before it starts.
        let request = PerformRequest()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                outcome.arm(continuation)
                let accepted = loop.enqueue(PendingBlock(
                    modes: .ordered(OrderedBlock(modes: ModeSelector(modes), order: 0, request: request)),
                    body: core.wrap({ outcome.finish(Result { try task() }) }, on: loop),
                    discarded: { error in outcome.finish(.failure(error)) },
                    origin: BlockOrigin(tag: tag, file: file, line: line)
                ))
                if !accepted { outcome.finish(.failure(RunLoopError.loopGone(threadName: name))) }
            }
        } onCancel: {
            request.cancel()
            outcome.finish(.failure(CancellationError()))
        }
    }

    /// Lets the task in progress finish, discards the queued ones, ends the
    /// loop and joins the thread. Idempotent; any thread.
    public func stop() { core.stop(draining: false, fromDeinit: false) }

    /// Runs every task already queued, then stops as `stop()` does. Tasks
    /// submitted after this call are refused with `RunLoopError.loopGone`.
    public func stopAfterDraining() { core.stop(draining: true, fromDeinit: false) }
}
