internal import CZeroMQ
internal import Glibc

/// A failed libzmq call: the `errno` value libzmq reported and the call that failed.
///
/// Every throwing API of this module throws `ZMQError` (typed throws), so callers can
/// switch on ``code`` or use the convenience predicates without casting.
///
/// Thread rules: a plain value; `Sendable`, and every member may be used on any thread.
/// No member fails.
public struct ZMQError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The `errno` value, as read from `zmq_errno()` right after the failing call.
    ///
    /// libzmq's own codes (for example `ETERM`, or `ENOTSOCK` on platforms whose libc
    /// lacks it) live above `ZMQ_HAUSNUMERO`; the usual POSIX codes keep their values.
    public let code: Int32

    /// The call that failed, with its most telling argument, for example
    /// `zmq_bind(ipc:///run/x)` or `zmq_setsockopt(ZMQ_LINGER)`.
    public let operation: String

    /// Makes an error from an `errno` value and the name of the failed operation.
    ///
    /// - Parameters:
    ///   - code: an `errno` value (POSIX or one of libzmq's own).
    ///   - operation: the failed call, shown in ``description``.
    public init(code: Int32, operation: String) {
        self.code = code
        self.operation = operation
    }

    /// libzmq's text for ``code`` (`zmq_strerror`), which also knows libzmq's own codes
    /// that `strerror` does not.
    public var message: String {
        String(cString: zmq_strerror(code))
    }

    /// `"<operation> failed: <message> (errno <code>)"`.
    public var description: String {
        "\(operation) failed: \(message) (errno \(code))"
    }

    /// `EAGAIN`: a non-blocking call would have blocked, or a send/receive timeout
    /// (`ZMQ_SNDTIMEO`, `ZMQ_RCVTIMEO`) expired.
    public var isWouldBlock: Bool { code == EAGAIN }

    /// `ETERM`: the socket's context is being terminated.
    public var isContextTerminated: Bool { code == ETERM }

    /// `EINTR`: a signal interrupted a blocking call. Socket sends and receives retry
    /// on their own, so callers mostly see this from `zmq_ctx_term`-like calls only.
    public var isInterrupted: Bool { code == EINTR }

    /// The error for `operation`, reading `zmq_errno()` now: call it immediately after
    /// the failing libzmq call, before anything else can overwrite `errno`.
    static func last(_ operation: String) -> ZMQError {
        ZMQError(code: zmq_errno(), operation: operation)
    }
}
