public import ZeroMQ

/// Why an operation of a run loop or a `LoopThread` failed.
///
/// Environmental failures carry their cause (`SystemCallError`, `ZMQError`,
/// `TimeoutError`, shared with `PortError`); misuse that a program can
/// recover from carries what was wrong. Programming errors trap instead,
/// with a message that says what to do. Every case's `description` is a
/// sentence a user can act on.
public enum RunLoopError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A system call failed (an eventfd, timerfd or epoll set could not be
    /// made, epoll refused an fd).
    case systemCall(SystemCallError)
    /// libzmq refused an operation (reading a socket's ZMQ_FD).
    case zeroMQ(ZMQError)
    /// A time interval, delay or wait was negative, NaN or infinite where
    /// that makes no sense; `reason` names the parameter.
    case invalidInterval(TimeInterval, reason: String)
    /// The loop's thread has exited, or its `LoopThread` has stopped: the
    /// work was not accepted, or was discarded before it ran. One case,
    /// whichever API reports it (S-BLK-2, S-KEEP-1).
    case loopGone(threadName: String)
    /// Work was submitted to a `LoopThread` before `start()`.
    case notStarted(threadName: String)
    /// `start()` was called on a `LoopThread` that is already running.
    case alreadyStarted(threadName: String)
    /// `start()` was called on a `LoopThread` that has stopped: as with
    /// NSThread, a stopped thread cannot run again.
    case cannotRestart(threadName: String)
    /// The system refused to start a `LoopThread` or make its loop.
    case startFailed(threadName: String, reason: String)
    /// Waiting for work on another loop ran out of time; the work may
    /// still run later.
    case timedOut(TimeoutError)
    /// The work was queued with `tag` and cancelled with
    /// `cancelPerformRequests(tag:)` before it ran; it never will.
    case cancelled(tag: String, threadName: String)

    /// What happened and, where there is one, what to do.
    public var description: String {
        switch self {
        case let .systemCall(error): error.description
        case let .zeroMQ(error): error.description
        case let .invalidInterval(value, reason): "invalid time interval \(value): \(reason)"
        case let .loopGone(name): "the run loop of thread '\(name)' is gone (its thread has exited or its LoopThread has stopped): the work did not run there"
        case let .notStarted(name): "LoopThread '\(name)' has not been started: call start() before submitting work"
        case let .alreadyStarted(name): "LoopThread '\(name)' is already running"
        case let .cannotRestart(name): "LoopThread '\(name)' has stopped and cannot be restarted: make a new LoopThread"
        case let .startFailed(name, reason): "LoopThread '\(name)' could not start: \(reason)"
        case let .timedOut(error): error.description
        case let .cancelled(tag, name): "the work tagged '\(tag)' on the run loop of thread '\(name)' was cancelled (cancelPerformRequests(tag:)) before it ran"
        }
    }

    /// A failed system call, reading `errno` now.
    static func lastSystemError(_ call: String) -> RunLoopError {
        .systemCall(.last(call))
    }

    /// Validates a timer interval, delay or wait: finite and not negative.
    package static func validate(_ interval: TimeInterval, _ what: String) throws(RunLoopError) {
        if interval.isNaN { throw .invalidInterval(interval, reason: "\(what) is NaN") }
        if interval.isInfinite { throw .invalidInterval(interval, reason: "\(what) is infinite") }
        if interval < 0 { throw .invalidInterval(interval, reason: "\(what) is negative") }
    }
}
