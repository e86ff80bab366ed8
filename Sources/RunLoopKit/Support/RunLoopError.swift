import Glibc
public import ZeroMQ

/// Why a run-loop operation failed. Environmental failures (the system or
/// libzmq refused) carry the call and its errno; misuse that a program can
/// recover from carries what was wrong. Programming errors trap instead, with
/// a message that says what to do.
public enum RunLoopError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A system call failed: `call` names it, `errno` says why.
    case systemCallFailed(call: String, errno: Int32)
    /// libzmq refused an operation.
    case zeroMQ(ZMQError)
    /// A time interval was negative, NaN or infinite where that makes no sense.
    case invalidInterval(TimeInterval, reason: String)
    /// The loop's thread has exited, so nothing can run on it any more.
    case loopThreadExited(threadName: String)
    /// Waiting for a block to run on another loop timed out; the block may
    /// still run later.
    case timedOut(waitingFor: String)

    public var description: String {
        switch self {
        case let .systemCallFailed(call, code):
            return "\(call) failed: \(String(cString: strerror(code))) (errno \(code))"
        case let .zeroMQ(error):
            return error.description
        case let .invalidInterval(value, reason):
            return "invalid time interval \(value): \(reason)"
        case let .loopThreadExited(name):
            return "the run loop of thread '\(name)' is gone: its thread has exited"
        case let .timedOut(what):
            return "timed out waiting for \(what)"
        }
    }

    static func lastSystemError(_ call: String) -> RunLoopError {
        .systemCallFailed(call: call, errno: errno)
    }
}

extension RunLoopError {
    /// Validates a timer interval, delay or wait: finite and not negative.
    static func validate(_ interval: TimeInterval, _ what: String) throws(RunLoopError) {
        if interval.isNaN { throw .invalidInterval(interval, reason: "\(what) is NaN") }
        if interval.isInfinite { throw .invalidInterval(interval, reason: "\(what) is infinite") }
        if interval < 0 { throw .invalidInterval(interval, reason: "\(what) is negative") }
    }
}
