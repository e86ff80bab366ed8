internal import CZeroMQ
internal import Glibc
internal import Synchronization

/// What happens to a socket's connections (`man zmq_socket_monitor`): the
/// events libzmq reports about a watched socket, read from a PAIR socket
/// connected to the monitor's inproc endpoint.
///
/// ```swift
/// let monitor = try SocketMonitor(watching: socket, in: context)
/// // poll monitor.fileDescriptor, then:
/// while let event = try monitor.next(dontWait: true) { print(event.kind, event.endpoint) }
/// ```
///
/// Events are reported from the monitor's start only: make it before the
/// watched socket binds or connects, or a quick handshake's events are lost.
///
/// Thread rules: made on the watched socket's owner thread (libzmq starts
/// the monitor through the watched socket); then the monitor's own PAIR
/// socket belongs to whoever reads it (``Socket``'s ownership rules), and
/// `close()` is theirs.
public final class SocketMonitor {
    /// One event.
    public struct Event: Sendable, Equatable {
        /// What happened.
        public let kind: Kind
        /// The event's value: a file descriptor for `accepted`, `connected`
        /// and `disconnected` (and others of a connection), an error number
        /// for the failures, a retry interval for `connectRetried`.
        public let value: Int32
        /// The endpoint it concerns (the peer's for a connection, the
        /// bound one for a listener).
        public let endpoint: String
    }

    /// The kinds of event (`ZMQ_EVENT_*`).
    public enum Kind: Sendable, Hashable {
        /// A connection to a peer was made (its file descriptor in `value`).
        case connected
        /// A connect did not succeed at once; libzmq goes on trying.
        case connectDelayed
        /// A connect is tried again (after `value` milliseconds).
        case connectRetried
        /// The socket listens at the endpoint.
        case listening
        /// Binding failed (`value` the errno).
        case bindFailed
        /// A peer's connection was accepted (its file descriptor in `value`).
        case accepted
        /// Accepting a connection failed (`value` the errno).
        case acceptFailed
        /// A connection's file descriptor was closed.
        case closed
        /// Closing failed.
        case closeFailed
        /// A connection ended: the peer closed it, the network failed, or
        /// heartbeats timed out (its file descriptor in `value`).
        case disconnected
        /// Monitoring stopped; no event follows.
        case monitorStopped
        /// The security handshake failed, with no more detail (`value` the errno).
        case handshakeFailedNoDetail
        /// The security handshake finished: the connection carries messages.
        case handshakeSucceeded
        /// The handshake failed on the protocol (a peer speaking another
        /// mechanism, a malformed command).
        case handshakeFailedProtocol
        /// The handshake failed because the ZAP handler refused the peer
        /// (or, for a client, the server refused it).
        case handshakeFailedAuth
        /// An event this wrapper does not name.
        case other(UInt16)

        init(_ raw: UInt16) {
            switch Int32(raw) {
            case ZMQ_EVENT_CONNECTED: self = .connected
            case ZMQ_EVENT_CONNECT_DELAYED: self = .connectDelayed
            case ZMQ_EVENT_CONNECT_RETRIED: self = .connectRetried
            case ZMQ_EVENT_LISTENING: self = .listening
            case ZMQ_EVENT_BIND_FAILED: self = .bindFailed
            case ZMQ_EVENT_ACCEPTED: self = .accepted
            case ZMQ_EVENT_ACCEPT_FAILED: self = .acceptFailed
            case ZMQ_EVENT_CLOSED: self = .closed
            case ZMQ_EVENT_CLOSE_FAILED: self = .closeFailed
            case ZMQ_EVENT_DISCONNECTED: self = .disconnected
            case ZMQ_EVENT_MONITOR_STOPPED: self = .monitorStopped
            case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL: self = .handshakeFailedNoDetail
            case ZMQ_EVENT_HANDSHAKE_SUCCEEDED: self = .handshakeSucceeded
            case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL: self = .handshakeFailedProtocol
            case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH: self = .handshakeFailedAuth
            default: self = .other(raw)
            }
        }

        /// The kind's bit in `zmq_socket_monitor`'s mask (0 for `.other`).
        var mask: Int32 {
            switch self {
            case .connected: ZMQ_EVENT_CONNECTED
            case .connectDelayed: ZMQ_EVENT_CONNECT_DELAYED
            case .connectRetried: ZMQ_EVENT_CONNECT_RETRIED
            case .listening: ZMQ_EVENT_LISTENING
            case .bindFailed: ZMQ_EVENT_BIND_FAILED
            case .accepted: ZMQ_EVENT_ACCEPTED
            case .acceptFailed: ZMQ_EVENT_ACCEPT_FAILED
            case .closed: ZMQ_EVENT_CLOSED
            case .closeFailed: ZMQ_EVENT_CLOSE_FAILED
            case .disconnected: ZMQ_EVENT_DISCONNECTED
            case .monitorStopped: ZMQ_EVENT_MONITOR_STOPPED
            case .handshakeFailedNoDetail: ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL
            case .handshakeSucceeded: ZMQ_EVENT_HANDSHAKE_SUCCEEDED
            case .handshakeFailedProtocol: ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL
            case .handshakeFailedAuth: ZMQ_EVENT_HANDSHAKE_FAILED_AUTH
            case .other: 0
            }
        }
    }

    /// The PAIR socket the events arrive on.
    private let pair: Socket
    private let eventFrame = Message()
    private let endpointFrame = Message()
    private static let nextID = Atomic<UInt64>(1)

    /// Starts monitoring every event of `socket` (`zmq_socket_monitor` to a
    /// unique inproc endpoint in `context`, the socket's own, which a PAIR
    /// socket of this monitor connects to).
    /// - Throws: ``ZMQError`` if libzmq refuses (`ETERM`, `ENOTSOCK`).
    public init(watching socket: Socket, in context: ZMQContext) throws(ZMQError) {
        pair = try Self.start(watching: socket, in: context, mask: ZMQ_EVENT_ALL)
    }

    /// Starts monitoring only the events of `kinds` (`.other` kinds are
    /// ignored). A monitor read seldom should watch few kinds: libzmq
    /// queues every event it reports until the monitor reads it (a
    /// connection retried every 100 ms, for one), and does not free an
    /// event it cannot queue (call ``stop(monitoring:)`` before
    /// ``close()`` for the same reason).
    /// - Throws: ``ZMQError`` if libzmq refuses (`ETERM`, `ENOTSOCK`).
    public init(watching socket: Socket, in context: ZMQContext, only kinds: Set<Kind>) throws(ZMQError) {
        pair = try Self.start(watching: socket, in: context, mask: kinds.reduce(0) { $0 | $1.mask })
    }

    /// Starts libzmq's monitor of `socket` and returns the PAIR socket
    /// connected to it.
    private static func start(watching socket: Socket, in context: ZMQContext, mask: Int32) throws(ZMQError) -> Socket {
        let endpoint = "inproc://zeromq-monitor/\(getpid())/\(Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue)"
        let handle = try socket.checkedHandle("zmq_socket_monitor")
        guard zmq_socket_monitor(handle, endpoint, mask) == 0 else { throw ZMQError.last("zmq_socket_monitor") }
        let pair = try context.makeSocket(.pair)
        do {
            try pair.connect(endpoint)
        } catch {
            pair.close()
            throw error
        }
        pair.releaseOwnership()
        return pair
    }

    /// Stops the monitoring of `socket` (`zmq_socket_monitor` with no
    /// endpoint); its monitor reads `monitorStopped` last. Thread rules:
    /// the watched socket's owner thread.
    /// - Throws: ``ZMQError`` (`ENOTSOCK` after close).
    public static func stop(monitoring socket: Socket) throws(ZMQError) {
        let handle = try socket.checkedHandle("zmq_socket_monitor")
        guard zmq_socket_monitor(handle, nil, 0) == 0 else { throw ZMQError.last("zmq_socket_monitor") }
    }

    /// The PAIR's `ZMQ_FD`, to poll for events (edge-triggered, as every
    /// ZMQ_FD: read events until ``next(dontWait:)`` returns nil).
    public var fileDescriptor: Int32 {
        get throws(ZMQError) {
            defer { pair.releaseOwnership() }
            return try pair.fileDescriptor
        }
    }

    /// The next event; nil when none is queued and `dontWait`, or once the
    /// monitor is closed.
    /// - Throws: ``ZMQError`` (`ETERM`).
    public func next(dontWait: Bool) throws(ZMQError) -> Event? {
        defer { pair.releaseOwnership() }
        guard !isClosed else { return nil }
        guard try pair.receive(into: eventFrame, dontWait: dontWait) else { return nil }
        guard eventFrame.hasMore else { return nil }
        _ = try pair.receive(into: endpointFrame)
        let bytes = eventFrame.unsafeBytes
        guard bytes.count >= 6 else { return nil }
        let raw = UInt16(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt16.self))
        let value = Int32(littleEndian: bytes.loadUnaligned(fromByteOffset: 2, as: Int32.self))
        let endpoint = String(decoding: endpointFrame.unsafeBytes, as: UTF8.self)
        return Event(kind: Kind(raw), value: value, endpoint: endpoint)
    }

    private var isClosed = false

    /// Closes the monitor's PAIR socket. Idempotent.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        pair.close()
    }

    deinit {
        if !isClosed { pair.close() }
    }
}
