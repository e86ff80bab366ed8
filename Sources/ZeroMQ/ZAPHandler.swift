internal import CLinuxSupport
internal import CZeroMQ
internal import Glibc
internal import Synchronization

/// A ZAP handler (ZeroMQ RFC 27, `man zmq` "ZAP"): decides, for every
/// connection a CURVE (or other secured) server socket of its context
/// accepts, whether the client may in, by a closure. A REP socket at
/// `inproc://zeromq.zap.01` in the context, served on a thread of its own
/// until `close()` or until the context terminates.
///
/// Bind it before any server socket of its context binds: measured with
/// Debian's libzmq 4.3.4, a CURVE server whose context has no ZAP handler
/// accepts any client key (even with `ZMQ_ZAP_DOMAIN` set), so a server
/// bound first would let anyone in until the handler exists.
///
/// Thread rules: any thread; the closure runs on the handler's thread, one
/// request at a time.
public final class ZAPHandler: @unchecked Sendable {
    /// What a client asks to connect with.
    public struct Request: Sendable {
        /// The server socket's ZAP domain (`ZMQ_ZAP_DOMAIN`).
        public let domain: String
        /// The client's IP address, as text.
        public let address: String
        /// The connection's routing id, if the server socket has one for it.
        public let routingID: [UInt8]
        /// "NULL", "PLAIN" or "CURVE".
        public let mechanism: String
        /// The client's CURVE public key (CURVE only).
        public let clientKey: CurveKey?
    }

    /// The answer to a request.
    public enum Decision: Sendable, Equatable {
        /// Let the client in; `userID` becomes the "User-Id" property of
        /// its messages (``Message/property(_:)``).
        case allow(userID: String)
        /// Refuse it: the handshake fails (the client's monitor reports
        /// `handshakeFailedAuth`).
        case deny(reason: String)
    }

    /// The endpoint libzmq asks (RFC 27).
    public static let endpoint = "inproc://zeromq.zap.01"

    private let socket: Socket
    private let threadName: String
    private let authorize: @Sendable (Request) -> Decision
    private let stopping = Atomic<Bool>(false)
    private let state = Mutex<(thread: pthread_t?, closed: Bool)>((nil, false))
    /// The handler thread's name unless another is given.
    public static let threadName = "zmq-zap"
    /// How often the handler's thread looks at `stopping`.
    private static let pollMilliseconds: Int32 = 100

    /// Binds the handler in `context` and starts serving.
    /// - Parameters:
    ///   - context: the context whose secured sockets the handler serves.
    ///   - threadName: the handler thread's name (15 bytes at most are
    ///     kept), as `/proc/<pid>/task/<tid>/comm` shows it.
    ///   - authorize: decides each request, on the handler's thread.
    /// - Throws: ``ZMQError``: `EADDRINUSE` if the context has a handler
    ///   already, `ETERM` if it is terminating.
    public init(
        context: ZMQContext, threadName: String = ZAPHandler.threadName,
        authorize: @escaping @Sendable (Request) -> Decision
    ) throws(ZMQError) {
        self.authorize = authorize
        self.threadName = threadName
        socket = try context.makeSocket(.rep)
        do {
            try socket.setLinger(milliseconds: 0)
            try socket.setReceiveTimeout(milliseconds: Self.pollMilliseconds)
            try socket.bind(Self.endpoint)
        } catch {
            socket.close()
            throw error
        }
        socket.releaseOwnership()
        var thread = pthread_t()
        // U-ZAP-THREAD (docs/unsafe-sites.md).
        let box = Unmanaged.passRetained(self)
        let made = pthread_create(&thread, nil, { raw in
            Unmanaged<ZAPHandler>.fromOpaque(raw!).takeRetainedValue().serve()
            return nil
        }, box.toOpaque())
        guard made == 0 else {
            box.release()
            socket.close()
            throw ZMQError(code: made, operation: "pthread_create (ZAP handler)")
        }
        state.withLock { $0.thread = thread }
    }

    /// Stops serving and joins the thread; the endpoint is free again.
    /// Idempotent. Not from the handler's own closure.
    public func close() {
        stopping.store(true, ordering: .releasing)
        let thread: pthread_t? = state.withLock { state in
            defer { state.thread = nil }
            return state.thread
        }
        if let thread { pthread_join(thread, nil) }
    }

    deinit {
        // The thread holds the handler until it ends, so a handler that
        // reaches deinit has no thread left (closed, or the context ended).
    }

    /// The handler's thread: answers requests until closed or the context ends.
    private func serve() {
        _ = rlk_set_current_thread_name(threadName)
        var frames: [Message] = []
        while !stopping.load(ordering: .acquiring) {
            do {
                guard try receiveRequest(into: &frames) else { continue }
                try reply(to: frames)
            } catch where error.code == ETERM {
                break
            } catch where error.code == EAGAIN {
                continue
            } catch {
                // A malformed request breaks REP's send-receive order only
                // if unanswered; answer nothing and go on.
                continue
            }
        }
        // Unbound first: libzmq frees an inproc endpoint at unbind, but at
        // close only once its reaper has destroyed the socket, so that a new
        // handler bound right after `close()` could find it taken.
        try? socket.unbind(Self.endpoint)
        socket.close()
        state.withLock { $0.closed = true }
    }

    /// Receives one request's frames; false when the wait timed out.
    private func receiveRequest(into frames: inout [Message]) throws(ZMQError) -> Bool {
        frames.removeAll(keepingCapacity: true)
        let first = Message()
        guard try receiveOrTimeout(first) else { return false }
        frames.append(first)
        while frames[frames.count - 1].hasMore {
            let next = Message()
            _ = try socket.receive(into: next)
            frames.append(next)
        }
        return true
    }

    private func receiveOrTimeout(_ message: Message) throws(ZMQError) -> Bool {
        do {
            return try socket.receive(into: message)
        } catch where error.code == EAGAIN {
            return false
        }
    }

    /// RFC 27: version, request id, domain, address, identity, mechanism,
    /// credentials → version, request id, status code, status text, user
    /// id, metadata.
    private func reply(to frames: [Message]) throws(ZMQError) {
        func text(_ index: Int) -> String {
            index < frames.count ? String(decoding: frames[index].unsafeBytes, as: UTF8.self) : ""
        }
        let requestID = frames.count > 1 ? Array(frames[1].unsafeBytes) : []
        var decision = Decision.deny(reason: "malformed ZAP request")
        if frames.count >= 6, text(0) == "1.0" {
            let mechanism = text(5)
            let key = mechanism == "CURVE" && frames.count >= 7 ? try? CurveKey(bytes: Array(frames[6].unsafeBytes)) : nil
            decision = authorize(Request(
                domain: text(2), address: text(3), routingID: Array(frames[4].unsafeBytes), mechanism: mechanism, clientKey: key))
        }
        let (code, status, user): (String, String, String) = switch decision {
        case let .allow(userID): ("200", "OK", userID)
        case let .deny(reason): ("400", reason, "")
        }
        let parts: [[UInt8]] = [Array("1.0".utf8), requestID, Array(code.utf8), Array(status.utf8), Array(user.utf8), []]
        for (index, part) in parts.enumerated() {
            let outcome: Result<Bool, ZMQError> = part.withUnsafeBytes { raw in
                Result { () throws(ZMQError) in try socket.send(raw, more: index < parts.count - 1) }
            }
            _ = try outcome.get()
        }
    }
}
