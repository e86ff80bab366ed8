internal import CZeroMQ
internal import Glibc
internal import Synchronization

/// A libzmq context: the I/O thread and the table of sockets that sockets are made from.
///
/// One context per process, ``shared`` (docs/design.md, "Ports and transports"). Separate contexts exist for tests and for
/// code that must tear everything down (its `deinit` terminates the context).
///
/// Thread rules: libzmq contexts are thread-safe (unlike sockets), and this class keeps no
/// mutable state of its own, which is why it is `@unchecked Sendable`: use it, and make
/// sockets, from any thread.
public final class ZMQContext: @unchecked Sendable {
    /// The one context of the process, created on first use.
    ///
    /// It allows `min(65_536, ZMQ_SOCKET_LIMIT)` sockets (libzmq's default of 1023 makes
    /// the 1024th `zmq_socket` fail with `EMFILE`) and sets `ZMQ_BLOCKY` to 0, so that
    /// terminating never waits forever on lingering messages. It is never terminated:
    /// it lives until the process exits.
    ///
    /// Creating it stops the process if libzmq cannot make a context at all (out of file
    /// descriptors or memory), as there is nothing sensible to continue with.
    public static let shared: ZMQContext = {
        do {
            return try ZMQContext()
        } catch {
            fatalError("ZeroMQ: cannot create the process context: \(error)")
        }
    }()

    /// The `void *` from `zmq_ctx_new`.
    let handle: UnsafeMutableRawPointer

    /// Creates a context (`zmq_ctx_new`) allowing `min(maxSockets, ZMQ_SOCKET_LIMIT)`
    /// sockets, with `ZMQ_BLOCKY` = 0.
    ///
    /// - Parameter maxSockets: the most sockets open at once; at least 1. Each socket
    ///   also uses a file descriptor, so `RLIMIT_NOFILE` limits it too.
    /// - Throws: ``ZMQError`` from `zmq_ctx_new` (for example `EMFILE`) or from
    ///   `zmq_ctx_set` (`EINVAL` when `maxSockets` is not positive).
    /// - Parameter blockyTermination: false (the default) makes `terminate()`
    ///   and deinit drop unsent messages (ZMQ_BLOCKY 0); true makes them wait
    ///   for each socket's linger, to flush what was accepted.
    public init(maxSockets: Int32 = 65_536, blockyTermination: Bool = false) throws(ZMQError) {
        guard let handle = zmq_ctx_new() else {
            throw ZMQError.last("zmq_ctx_new")
        }
        // libzmq rejects a ZMQ_MAX_SOCKETS above what its poller can handle, which it
        // reports as ZMQ_SOCKET_LIMIT; clamp rather than fail.
        let limit = zmq_ctx_get(handle, ZMQ_SOCKET_LIMIT)
        let wanted = limit > 0 ? min(maxSockets, limit) : maxSockets
        if zmq_ctx_set(handle, ZMQ_MAX_SOCKETS, wanted) != 0 {
            let error = ZMQError.last("zmq_ctx_set(ZMQ_MAX_SOCKETS, \(wanted))")
            zmq_ctx_term(handle)
            throw error
        }
        // With BLOCKY on (the default), zmq_ctx_term waits for every unsent message of
        // sockets whose linger was left infinite; with it off, new sockets linger 0.
        if zmq_ctx_set(handle, ZMQ_BLOCKY, blockyTermination ? 1 : 0) != 0 {
            let error = ZMQError.last("zmq_ctx_set(ZMQ_BLOCKY, 0)")
            zmq_ctx_term(handle)
            throw error
        }
        self.handle = handle
    }

    /// Terminates the context now (zmq_ctx_term): waits until every socket
    /// of the context is closed and has sent what it accepted, each for at
    /// most its linger time. Close the sockets first, or this waits for them.
    /// Idempotent; the context is unusable afterwards.
    ///
    /// Thread rules: any thread; blocks as described.
    public func terminate() {
        guard !terminated.exchange(true, ordering: .acquiringAndReleasing) else { return }
        while zmq_ctx_term(handle) != 0, zmq_errno() == EINTR {}
    }

    private let terminated = Atomic<Bool>(false)

    deinit {
        if terminated.load(ordering: .acquiring) { return }
        // Every Socket holds its context strongly, so by now all of this context's
        // sockets are closed and zmq_ctx_term has nothing to wait for. It can still be
        // interrupted by a signal, which only means "try again".
        while zmq_ctx_term(handle) != 0, zmq_errno() == EINTR {}
    }

    /// The most sockets this context allows open at once (`ZMQ_MAX_SOCKETS`).
    ///
    /// Thread rules: any thread.
    public var maxSockets: Int32 {
        zmq_ctx_get(handle, ZMQ_MAX_SOCKETS)
    }

    /// Makes a socket of `type` (`zmq_socket`), with `ZMQ_LINGER` set to 0 so that closing
    /// it drops unsent messages instead of holding up the context (see ``Socket/setLinger(milliseconds:)``).
    ///
    /// The new socket has no owner thread yet: the first thread that uses it becomes its
    /// owner (see ``Socket/releaseOwnership()``), so it may be made on one thread and used
    /// on another.
    ///
    /// Thread rules: any thread.
    /// - Throws: ``ZMQError`` from `zmq_socket`, for example `EMFILE` when ``maxSockets``
    ///   sockets are already open or the process is out of file descriptors.
    public func makeSocket(_ type: SocketType) throws(ZMQError) -> Socket {
        guard let raw = zmq_socket(handle, type.rawValue) else {
            throw ZMQError.last("zmq_socket(\(type))")
        }
        var zero: Int32 = 0
        if zmq_setsockopt(raw, ZMQ_LINGER, &zero, MemoryLayout<Int32>.size) != 0 {
            let error = ZMQError.last("zmq_setsockopt(ZMQ_LINGER)")
            zmq_close(raw)
            throw error
        }
        return Socket(handle: raw, type: type, context: self)
    }
}
