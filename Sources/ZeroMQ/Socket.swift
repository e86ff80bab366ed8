internal import CLinuxSupport
internal import CZeroMQ
public import FoundationEssentials
internal import Glibc
internal import Synchronization

/// A ZeroMQ socket.
///
/// ## Thread rules
///
/// libzmq sockets are not thread-safe, so a `Socket` has one owner thread at a time
/// (docs/design.md, "Ports and transports": every socket has one owner at a time). The first thread that uses it
/// becomes its owner; using it from another thread fails an assertion in debug builds,
/// naming both threads. To hand a socket to another thread, call ``releaseOwnership()``
/// on the owner thread first, then pass the socket on in a way that orders the two
/// threads (a lock, a queue, thread join). ``close()`` and `deinit` may run on any
/// thread once no other thread uses the socket. Beware of `async` code: a task may resume
/// on another thread after any `await`, so do not hold a socket across suspension points
/// without releasing it.
///
/// The check costs nothing in optimized builds: it sits inside `assert`. The class is
/// `@unchecked Sendable` only so that it can be handed over; the rule above, not the
/// compiler, keeps it safe.
///
/// ## Errors
///
/// Every failing call throws ``ZMQError`` with the libzmq call and `errno`. After
/// ``close()`` every operation throws `ENOTSOCK`. Blocking sends and receives retry
/// `EINTR` themselves.
///
/// ## Lifetime
///
/// A socket keeps its ``ZMQContext`` alive, because `zmq_ctx_term` waits until every
/// socket of the context is closed.
public final class Socket: @unchecked Sendable {
    /// The socket's pattern.
    ///
    /// Thread rules: immutable; any thread.
    public let type: SocketType

    /// Keeps the context alive for as long as the socket exists (see "Lifetime").
    private let context: ZMQContext

    /// The libzmq socket; nil once closed. Not atomic: only the owner thread touches it,
    /// and close() is allowed only when no other thread is using the socket.
    private var handle: UnsafeMutableRawPointer?

    /// Kernel thread id of the owner thread; 0 while the socket has no owner.
    private let owner = Atomic<Int32>(0)

    /// Reused by receiveMultipart, so that it allocates one zmq_msg_t per socket rather
    /// than one per call.
    private let scratch = Message()

    init(handle: UnsafeMutableRawPointer, type: SocketType, context: ZMQContext) {
        self.handle = handle
        self.type = type
        self.context = context
    }

    deinit {
        close()
    }

    // MARK: - Ownership

    /// Gives up the calling thread's ownership, so that another thread may use the
    /// socket next (it becomes the owner on first use).
    ///
    /// Thread rules: call it on the owner thread (or while the socket has no owner); in
    /// debug builds calling it from another thread fails the ownership assertion.
    public func releaseOwnership() {
        assert(callerMayUse(), ownershipViolation())
        // Bookkeeping for the debug check alone: gone from optimized builds,
        // where a receive or send would otherwise pay an atomic store for it.
        assert(forgetOwner())
    }

    /// Clears the owner; true. Called only inside `assert`.
    private func forgetOwner() -> Bool {
        owner.store(0, ordering: .releasing)
        return true
    }

    /// Claims an unowned socket for the calling thread; true when the caller owns it.
    /// Called only inside `assert`, so it does not run in optimized builds.
    private func claimOwnership() -> Bool {
        let me = rlk_gettid()
        let (claimed, current) = owner.compareExchange(
            expected: 0, desired: me, ordering: .acquiringAndReleasing)
        return claimed || current == me
    }

    /// True when the caller owns the socket or nobody does; never claims it.
    private func callerMayUse() -> Bool {
        let current = owner.load(ordering: .acquiring)
        return current == 0 || current == rlk_gettid()
    }

    /// The assertion message; built only when the assertion fails.
    private func ownershipViolation() -> String {
        "ZeroMQ socket \(type) used on thread \(rlk_gettid()) while owned by thread "
            + "\(owner.load(ordering: .relaxed)): libzmq sockets are not thread-safe; "
            + "call releaseOwnership() on the owner thread to hand it over"
    }

    /// The libzmq socket for an operation by the calling thread: checks ownership
    /// (debug builds) and that the socket is open.
    ///
    /// - Parameter operation: evaluated only to build the error.
    @inline(__always)
    func checkedHandle(_ operation: @autoclosure () -> String) throws(ZMQError) -> UnsafeMutableRawPointer {
        assert(claimOwnership(), ownershipViolation())
        guard let handle else {
            throw ZMQError(code: ENOTSOCK, operation: operation())
        }
        return handle
    }

    // MARK: - Closing

    /// Closes the socket (`zmq_close`); unsent messages are dropped unless a linger was set.
    ///
    /// Idempotent; `deinit` calls it. Afterwards every operation throws `ENOTSOCK`.
    ///
    /// Thread rules: any thread, provided no other thread is using the socket at the time.
    /// Closing also clears the owner, so that whichever thread touches the closed socket
    /// next gets `ENOTSOCK` rather than an ownership failure.
    public func close() {
        guard let handle else { return }
        self.handle = nil
        // zmq_close fails only for a pointer that is not a socket, which the nil check
        // above rules out; it never blocks (lingering happens in the I/O thread).
        zmq_close(handle)
        owner.store(0, ordering: .releasing)
    }

    /// Whether ``close()`` has run.
    ///
    /// Thread rules: the owner thread, or any thread once no other thread uses the socket.
    public var isClosed: Bool {
        handle == nil
    }

    // MARK: - Endpoints

    /// Binds to `endpoint` (`zmq_bind`), for example `inproc://name`,
    /// `ipc:///run/user/1000/x`, `tcp://127.0.0.1:*`.
    ///
    /// Thread rules: owner thread (see the type's documentation).
    /// - Throws: ``ZMQError`` with operation `zmq_bind(<endpoint>)`: `EINVAL` for a
    ///   malformed endpoint, `EPROTONOSUPPORT` for an unknown transport, `EADDRINUSE`,
    ///   `ENOENT` for an ipc path whose directory is missing, `ENOTSOCK` after close.
    public func bind(_ endpoint: String) throws(ZMQError) {
        let socket = try checkedHandle("zmq_bind(\(endpoint))")
        if zmq_bind(socket, endpoint) != 0 { throw ZMQError.last("zmq_bind(\(endpoint))") }
    }

    /// Connects to `endpoint` (`zmq_connect`). For tcp and ipc the connection is made
    /// in the background and retried; inproc may connect before the peer binds.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` with operation `zmq_connect(<endpoint>)`: `EINVAL`,
    ///   `EPROTONOSUPPORT`, `ENOTSOCK` after close.
    public func connect(_ endpoint: String) throws(ZMQError) {
        let socket = try checkedHandle("zmq_connect(\(endpoint))")
        if zmq_connect(socket, endpoint) != 0 { throw ZMQError.last("zmq_connect(\(endpoint))") }
    }

    /// Stops listening on `endpoint` (`zmq_unbind`). For `*` ports, pass
    /// ``lastEndpoint``, the resolved address.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` with operation `zmq_unbind(<endpoint>)`: `ENOENT` when not
    ///   bound there, `ENOTSOCK` after close.
    public func unbind(_ endpoint: String) throws(ZMQError) {
        let socket = try checkedHandle("zmq_unbind(\(endpoint))")
        if zmq_unbind(socket, endpoint) != 0 { throw ZMQError.last("zmq_unbind(\(endpoint))") }
    }

    /// Drops the connection to `endpoint` (`zmq_disconnect`).
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` with operation `zmq_disconnect(<endpoint>)`: `ENOENT` when
    ///   not connected there, `ENOTSOCK` after close.
    public func disconnect(_ endpoint: String) throws(ZMQError) {
        let socket = try checkedHandle("zmq_disconnect(\(endpoint))")
        if zmq_disconnect(socket, endpoint) != 0 { throw ZMQError.last("zmq_disconnect(\(endpoint))") }
    }

    /// The endpoint of the last bind or connect (`ZMQ_LAST_ENDPOINT`), with wildcard
    /// ports resolved, for example `tcp://127.0.0.1:41234`; nil when there was none or the
    /// socket is closed.
    ///
    /// Thread rules: owner thread.
    public var lastEndpoint: String? {
        guard let text = try? stringOption(ZMQ_LAST_ENDPOINT, name: "ZMQ_LAST_ENDPOINT"),
            !text.isEmpty
        else { return nil }
        return text
    }

    // MARK: - Sending

    /// Sends one frame, copying `bytes` (`zmq_send`).
    ///
    /// Allocates nothing on the Swift side; libzmq stores frames up to 33 bytes inline
    /// and allocates a buffer for larger ones.
    ///
    /// Thread rules: owner thread.
    /// - Parameters:
    ///   - bytes: the frame; may be empty.
    ///   - more: more frames of the same message follow (`ZMQ_SNDMORE`).
    ///   - dontWait: fail fast instead of blocking (`ZMQ_DONTWAIT`).
    /// - Returns: false only when `dontWait` is true and the send would block (`EAGAIN`):
    ///   nothing was sent.
    /// - Throws: ``ZMQError``: `EAGAIN` when blocking and the send timeout
    ///   (``setSendTimeout(milliseconds:)``) expired, `EFSM` when the pattern forbids
    ///   sending now (REQ/REP), `EHOSTUNREACH`, `ETERM`, `ENOTSOCK` after close. `EINTR`
    ///   is retried, never thrown.
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, more: Bool = false, dontWait: Bool = false) throws(ZMQError) -> Bool {
        let socket = try checkedHandle("zmq_send")
        var flags: Int32 = 0
        if more { flags |= ZMQ_SNDMORE }
        if dontWait { flags |= ZMQ_DONTWAIT }
        while true {
            // A nil base address is fine for an empty frame: libzmq copies nothing then.
            if zmq_send(socket, bytes.baseAddress, bytes.count, flags) >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN, dontWait { return false }
            throw ZMQError(code: code, operation: "zmq_send")
        }
    }

    /// Sends one frame of `byteCount` bytes that `write` fills in place, in the buffer
    /// libzmq sends (`zmq_msg_init_size`, then `zmq_msg_send`): the frame is built once,
    /// with no copy of a buffer built beforehand (what ``send(_:more:dontWait:)-(UnsafeRawBufferPointer,_,_)``
    /// does inside `zmq_send`).
    ///
    /// With a `pool`, the buffer is one of the pool's (`zmq_msg_init_data`), given back
    /// to it when libzmq lets the frame go, if the frame fits and the pool has one to
    /// spare; otherwise libzmq allocates it as without a pool (see ``FramePool``).
    ///
    /// Thread rules: owner thread; the pool's owner too.
    /// - Parameters:
    ///   - byteCount: the frame's size.
    ///   - pool: where the buffer comes from, if anywhere.
    ///   - more: more frames of the same message follow (`ZMQ_SNDMORE`).
    ///   - dontWait: fail fast instead of blocking (`ZMQ_DONTWAIT`).
    ///   - write: fills all `byteCount` bytes; called once per call, before anything is
    ///     sent. It must not keep the buffer.
    /// - Returns: false only when `dontWait` is true and the send would block (`EAGAIN`):
    ///   nothing was sent, and the frame was released (a retry writes it again).
    /// - Throws: ``ZMQError`` as the bytes variant.
    @discardableResult
    public func send(
        byteCount: Int, from pool: FramePool? = nil, more: Bool = false, dontWait: Bool = false,
        write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(ZMQError) -> Bool {
        let socket = try checkedHandle("zmq_msg_send")
        var flags: Int32 = 0
        if more { flags |= ZMQ_SNDMORE }
        if dontWait { flags |= ZMQ_DONTWAIT }
        var message = zmq_msg_t()
        // Both fail only with ENOMEM; running out of memory stops the process, as
        // any Swift allocation does.
        if let buffer = pool?.take(byteCount: byteCount) {
            let bytes = buffer + FramePool.headerBytes
            write(UnsafeMutableRawBufferPointer(start: bytes, count: byteCount))
            guard zmq_msg_init_data(&message, bytes, byteCount, framePoolGiveBack, buffer) == 0 else {
                fatalError("ZeroMQ: \(ZMQError.last("zmq_msg_init_data(\(byteCount))"))")
            }
        } else {
            guard zmq_msg_init_size(&message, byteCount) == 0 else {
                fatalError("ZeroMQ: \(ZMQError.last("zmq_msg_init_size(\(byteCount))"))")
            }
            write(UnsafeMutableRawBufferPointer(start: zmq_msg_data(&message), count: byteCount))
        }
        return try Self.send(&message, on: socket, flags: flags, dontWait: dontWait)
    }

    /// Sends `message`, made, and retries an interrupted send; on success libzmq owns
    /// its content and leaves `message` empty, on failure it is closed (a pool's
    /// buffer goes back to it).
    @inline(__always)
    private static func send(_ message: inout zmq_msg_t, on socket: UnsafeMutableRawPointer, flags: Int32, dontWait: Bool) throws(ZMQError) -> Bool {
        while true {
            if zmq_msg_send(&message, socket, flags) >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            zmq_msg_close(&message)
            if code == EAGAIN, dontWait { return false }
            throw ZMQError(code: code, operation: "zmq_msg_send")
        }
    }

    /// Sends one frame of at most `capacity` bytes that `write` fills in place and
    /// whose size it returns: for a frame whose size is known only once written. Its
    /// buffer is a `pool`'s if `capacity` fits one, else one of its own, freed when
    /// libzmq lets the frame go (`zmq_msg_init_data` either way).
    ///
    /// Thread rules: owner thread; the pool's owner too.
    /// - Parameters:
    ///   - capacity: the most bytes the frame may take: the buffer `write` is given.
    ///   - pool: where the buffer comes from, if anywhere.
    ///   - more: more frames of the same message follow (`ZMQ_SNDMORE`).
    ///   - dontWait: fail fast instead of blocking (`ZMQ_DONTWAIT`).
    ///   - write: fills the frame from the buffer's start and returns how many bytes
    ///     it wrote (at most `capacity`); called once per call, before anything is sent.
    ///     It must not keep the buffer.
    /// - Returns: false only when `dontWait` is true and the send would block (`EAGAIN`),
    ///   as ``send(byteCount:from:more:dontWait:write:)``.
    /// - Throws: ``ZMQError`` as the bytes variant.
    @discardableResult
    public func send(
        upTo capacity: Int, from pool: FramePool? = nil, more: Bool = false, dontWait: Bool = false,
        write: (UnsafeMutableRawBufferPointer) -> Int
    ) throws(ZMQError) -> Bool {
        let socket = try checkedHandle("zmq_msg_send")
        let flags = (more ? ZMQ_SNDMORE : 0) | (dontWait ? ZMQ_DONTWAIT : 0)
        var message = zmq_msg_t()
        let pooled = pool?.take(byteCount: capacity)
        let bytes = pooled.map { $0 + FramePool.headerBytes } ?? malloc(max(capacity, 1))!
        let size = write(UnsafeMutableRawBufferPointer(start: bytes, count: capacity))
        precondition(size <= capacity, "ZeroMQ: a frame of \(size) bytes written where \(capacity) were made")
        let initialised = pooled != nil
            ? zmq_msg_init_data(&message, bytes, size, framePoolGiveBack, pooled)
            : zmq_msg_init_data(&message, bytes, size, { data, _ in free(data) }, nil)
        guard initialised == 0 else { fatalError("ZeroMQ: \(ZMQError.last("zmq_msg_init_data(\(size))"))") }
        return try Self.send(&message, on: socket, flags: flags, dontWait: dontWait)
    }

    /// Sends one frame holding `data`; see the `UnsafeRawBufferPointer` variant.
    ///
    /// Thread rules: owner thread.
    /// - Returns: false only when `dontWait` is true and the send would block.
    /// - Throws: ``ZMQError`` as for the bytes variant.
    @discardableResult
    public func send(_ data: Data, more: Bool = false, dontWait: Bool = false) throws(ZMQError) -> Bool {
        // withUnsafeBytes only rethrows untyped errors; Result carries the typed one out.
        let result = data.withUnsafeBytes { bytes in
            Result { () throws(ZMQError) in try send(bytes, more: more, dontWait: dontWait) }
        }
        return try result.get()
    }

    /// Sends one frame holding the UTF-8 bytes of `string` (no terminating NUL).
    ///
    /// Thread rules: owner thread.
    /// - Returns: false only when `dontWait` is true and the send would block.
    /// - Throws: ``ZMQError`` as for the bytes variant.
    @discardableResult
    public func send(_ string: String, more: Bool = false, dontWait: Bool = false) throws(ZMQError) -> Bool {
        // withUTF8 is mutating only to make a rare non-contiguous string contiguous; a
        // native string is used in place, without copying.
        var string = string
        let result = string.withUTF8 { utf8 in
            Result { () throws(ZMQError) in
                try send(UnsafeRawBufferPointer(utf8), more: more, dontWait: dontWait)
            }
        }
        return try result.get()
    }

    /// Sends `frames` as one multipart message.
    ///
    /// libzmq counts its high-water marks in whole messages, so once the first frame is
    /// accepted the others are queued at once: with `dontWait`, `false` means that nothing
    /// was sent, never a partial message.
    ///
    /// Thread rules: owner thread.
    /// - Parameters:
    ///   - frames: at least one frame.
    ///   - dontWait: fail fast instead of blocking on the first frame.
    /// - Returns: false only when `dontWait` is true and the first frame would block.
    /// - Throws: ``ZMQError``: `EINVAL` for no frames; `EAGAIN` with operation
    ///   `zmq_send(frame k of n)` if a later frame is refused, which libzmq does only when
    ///   the peer's pipe died mid-message (it then drops the partial message); otherwise
    ///   as the `UnsafeRawBufferPointer` variant of `send`.
    @discardableResult
    public func sendMultipart(_ frames: [Data], dontWait: Bool = false) throws(ZMQError) -> Bool {
        guard !frames.isEmpty else {
            throw ZMQError(code: EINVAL, operation: "zmq_send(multipart message of 0 frames)")
        }
        let last = frames.count - 1
        for index in frames.indices {
            if try !send(frames[index], more: index < last, dontWait: dontWait) {
                if index == 0 { return false }
                throw ZMQError(code: EAGAIN, operation: "zmq_send(frame \(index + 1) of \(frames.count))")
            }
        }
        return true
    }

    // MARK: - Receiving

    /// Receives one frame into `message` (`zmq_msg_recv`), replacing its content.
    ///
    /// Allocates nothing on the Swift side. Check ``Message/hasMore`` for further frames of
    /// the same message; libzmq delivers multipart messages whole, so they are there.
    ///
    /// Thread rules: owner thread; `message` must not be used by another thread meanwhile.
    /// - Parameters:
    ///   - message: the frame to fill.
    ///   - dontWait: return at once when nothing is queued (`ZMQ_DONTWAIT`).
    /// - Returns: false only when `dontWait` is true and nothing is there (`EAGAIN`);
    ///   `message` is then empty: libzmq releases its old content before looking.
    /// - Throws: ``ZMQError``: `EAGAIN` when blocking and the receive timeout
    ///   (``setReceiveTimeout(milliseconds:)``) expired, `EFSM` (REQ/REP order), `ETERM`,
    ///   `ENOTSOCK` after close. `EINTR` is retried, never thrown.
    public func receive(into message: Message, dontWait: Bool = false) throws(ZMQError) -> Bool {
        let socket = try checkedHandle("zmq_msg_recv")
        let flags: Int32 = dontWait ? ZMQ_DONTWAIT : 0
        while true {
            if zmq_msg_recv(message.pointer, socket, flags) >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN, dontWait { return false }
            throw ZMQError(code: code, operation: "zmq_msg_recv")
        }
    }

    /// Receives one whole multipart message, copying each frame into a `Data`.
    ///
    /// Thread rules: owner thread.
    /// - Parameter dontWait: return nil at once when no message is queued.
    /// - Returns: the frames (at least one), or nil when `dontWait` is true and nothing is
    ///   there.
    /// - Throws: ``ZMQError`` as ``receive(into:dontWait:)``.
    public func receiveMultipart(dontWait: Bool = false) throws(ZMQError) -> [Data]? {
        guard try receive(into: scratch, dontWait: dontWait) else { return nil }
        var frames = [scratch.data]
        while scratch.hasMore {
            // Multipart messages arrive whole, so the remaining frames are already
            // queued and this never waits.
            _ = try receive(into: scratch)
            frames.append(scratch.data)
        }
        // Do not pin the last frame's buffer until the next call.
        scratch.reset()
        return frames
    }
}
