internal import Glibc

/// A failed system call: which call, and the `errno` it set. One of the
/// causes that RunLoopKit's errors share (`RunLoopError.systemCall`,
/// `PortError.systemCall`), defined once here, in the lowest module that
/// raises it, and re-exported by RunLoopKit.
///
/// Thread rules: a plain value; `Sendable`, usable on any thread.
public struct SystemCallError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The call that failed, with its most telling argument, such as
    /// `epoll_ctl(ADD, fd 12)`.
    public let call: String
    /// The `errno` the call set; 0 if it set none.
    public let errno: Int32

    /// An error for `call`, which failed with `errno`.
    public init(call: String, errno: Int32) {
        self.call = call
        self.errno = errno
    }

    /// The error for `call`, reading `errno` now: make it right after the
    /// failing call, before anything else can change `errno`.
    public static func last(_ call: String) -> SystemCallError {
        SystemCallError(call: call, errno: Glibc.errno)
    }

    /// `"<call> failed: <strerror> (errno N)"`; a call that set no errno
    /// says so instead of "Success".
    public var description: String {
        guard errno != 0 else { return "\(call) failed (the system gave no reason)" }
        return "\(call) failed: \(String(cString: strerror(errno))) (errno \(errno))"
    }
}
