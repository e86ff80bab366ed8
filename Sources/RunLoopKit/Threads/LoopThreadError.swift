/// Why a `LoopThread` operation failed.
public enum LoopThreadError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A task was submitted before `start()`.
    case notStarted(name: String)
    /// `start()` was called on a thread that is already running.
    case alreadyStarted(name: String)
    /// `start()` was called on a thread that has been stopped: as with
    /// NSThread, a stopped thread cannot run again; make a new LoopThread.
    case cannotRestart(name: String)
    /// The thread has stopped (or is stopping): the task was not accepted, or
    /// was discarded before it ran.
    case stopped(name: String)
    /// The system refused to start the thread or its loop.
    case startFailed(name: String, reason: String)
    /// `performAndWait` gave up waiting; the task may still run later.
    case timedOut(name: String)

    public var description: String {
        switch self {
        case let .notStarted(name): "LoopThread '\(name)' has not been started: call start() before submitting tasks"
        case let .alreadyStarted(name): "LoopThread '\(name)' is already running"
        case let .cannotRestart(name): "LoopThread '\(name)' has been stopped and cannot be restarted: make a new LoopThread"
        case let .stopped(name): "LoopThread '\(name)' has stopped: the task did not run"
        case let .startFailed(name, reason): "LoopThread '\(name)' could not start: \(reason)"
        case let .timedOut(name): "timed out waiting for a task on LoopThread '\(name)'"
        }
    }
}
