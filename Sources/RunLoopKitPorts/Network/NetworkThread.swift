internal import CLinuxSupport
import Glibc
import Logging
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The thread that reads every tcp socket of the process (`NetworkHub`):
/// each listener's ROUTER and each dialled DEALER, and their monitors. A
/// message is checked (its destination must be this instance and a tcp
/// port of this process) and forwarded, frames unchanged and uncopied, to
/// its port's own queue over inproc, where the port's loop reads it as it
/// reads any message: per-port order, the port's batch and its mode
/// holding (S-SRC1-2) stay as they are. A connection's end is learned
/// here, from its monitor (a disconnect, a heartbeat missed, a handshake
/// refused) or from the tcp connection bound (S-NET-3).
///
/// A port whose queue is full holds up every tcp message into this process
/// behind it (head-of-line blocking): the thread reads nothing more until
/// the port has room, and the senders feel it as back-pressure, each for
/// its own deadline (docs/design.md, "Across machines").
final class NetworkThread: @unchecked Sendable {
    private unowned let hub: NetworkHub
    /// Filled when the thread has closed its sockets and ended.
    let finished = Completion<Void>()
    private let stopDeadline = Atomic<UInt64>(0)
    private static let logger = Logger(label: "RunLoopKit.Network")

    // Network thread only, from here on.
    /// The frames of the message being read, reused.
    private var frames: [Message] = [Message()]
    private var frameCount = 0
    /// A message whose port had no room, with its port: nothing more is
    /// read until it is forwarded.
    private var held: (frames: [Message], count: Int, portID: UInt64)?
    /// An inproc PUSH per port messages were forwarded to.
    private var forwarders: [UInt64: (port: WeakPortReference, socket: Socket)] = [:]
    private var lastHousekeeping: UInt64 = 0
    private var listeners: [TCPListener] = []
    private var dialled: [TCPConnection] = []
    private var socketsGeneration = UInt64.max
    /// Messages read from one socket before the others get a turn.
    private static let batch = 64

    init(hub: NetworkHub) { self.hub = hub }

    func start() {
        var handle = pthread_t()
        // U-NETWORK-THREADS (docs/unsafe-sites.md).
        let box = Unmanaged.passRetained(self)
        let made = pthread_create(&handle, nil, { raw in
            let thread = Unmanaged<NetworkThread>.fromOpaque(raw!).takeRetainedValue()
            _ = rlk_set_current_thread_name("RunLoopKit.net")
            thread.run()
            return nil
        }, box.toOpaque())
        precondition(made == 0, "RunLoopKit: cannot start the network thread: errno \(made)")
        pthread_detach(handle)
    }

    /// At exit: close everything, lingering until `deadline` for what was accepted.
    func stop(lingerUntil deadline: UInt64) {
        stopDeadline.store(deadline, ordering: .releasing)
    }

    private func run() {
        while true {
            let deadline = stopDeadline.load(ordering: .acquiring)
            if deadline != 0 { return closeEverything(lingerUntil: deadline) }
            let (listeners, dialled) = sockets()
            var busy = false
            if !retryHeld() {
                for listener in listeners { busy = readMessages(from: listener.socket, lock: listener.lock, listener: listener) || busy }
                for connection in dialled where connection.brokenError == nil {
                    busy = readMessages(from: connection.socket, lock: connection.socketLock, dialled: connection) || busy
                }
            }
            for listener in listeners { readEvents(of: listener) }
            for connection in dialled { readEvents(of: connection) }
            housekeeping(dialled)
            if !busy { waitForInput(listeners, dialled) }
        }
    }

    /// The listeners and dialled connections, read again from the hub only
    /// when its generation moved (a socket came or went).
    private func sockets() -> ([TCPListener], [TCPConnection]) {
        let current = hub.generation.load(ordering: .acquiring)
        if current != socketsGeneration {
            socketsGeneration = current
            (listeners, dialled) = hub.state.withLock { state in
                (Array(state.listeners.values), state.open.values.filter(\.isDialled))
            }
        }
        return (listeners, dialled)
    }

    // MARK: - Reading

    /// Reads up to `batch` messages from `socket`; true if it stopped at the batch's end.
    private func readMessages(from socket: Socket, lock: Lock, listener: TCPListener? = nil, dialled: TCPConnection? = nil) -> Bool {
        for _ in 0..<Self.batch {
            if held != nil { return false }
            let received: Bool = lock.withLock {
                defer { socket.releaseOwnership() }
                return receiveMessage(from: socket)
            }
            guard received else { return false }
            if let listener { handleAccepted(from: listener) } else if let dialled { handle(from: dialled, frames: 0..<frameCount) }
        }
        return true
    }

    private func receiveMessage(from socket: Socket) -> Bool {
        frameCount = 0
        do {
            guard try socket.receive(into: frames[0], dontWait: true) else { return false }
            frameCount = 1
            while frames[frameCount - 1].hasMore {
                if frameCount == frames.count { frames.append(Message()) }
                _ = try socket.receive(into: frames[frameCount], dontWait: true)
                frameCount += 1
            }
            return true
        } catch {
            if !error.isContextTerminated { Self.logger.error("tcp: receive failed: \(error)") }
            return false
        }
    }

    /// A message on a listener: [routing id, frames…]. A hello makes the
    /// peer's connection known; anything else is for a port.
    private func handleAccepted(from listener: TCPListener) {
        guard frameCount >= 2 else { return }
        let routingID = Array(frames[0].unsafeBytes)
        let first = frames[1].unsafeBytes
        if WireFormat.isControl(first) {
            guard case let .hello(from, _)? = try? WireFormat.decodeControl(first), routingID == WireFormat.instanceBytes(from) else {
                hub.drops.record(.badMagic, "a control frame that is not a hello, or a hello whose instance is not its routing id")
                return
            }
            let connection = TCPConnection(
                acceptedBy: listener, routingID: routingID, peer: from,
                address: frames[1].property("Peer-Address") ?? "(unknown address)",
                descriptor: frames[1].sourceDescriptor ?? -1, clientKey: frames[1].property("User-Id"))
            hub.accepted(connection)
            _ = try? connection.sendControl(WireFormat.encodeControl(.welcome(from: .current)))
            return
        }
        handle(from: nil, frames: 1..<frameCount)
    }

    /// A message for a port (frames `range`), or a dialled connection's welcome.
    private func handle(from dialled: TCPConnection?, frames range: Range<Int>) {
        let first = frames[range.lowerBound].unsafeBytes
        if WireFormat.isControl(first) {
            guard let dialled, case let .welcome(from)? = try? WireFormat.decodeControl(first) else {
                hub.drops.record(.badMagic, "a control frame that is not a welcome")
                return
            }
            if !dialled.welcomed(by: from) && dialled.brokenError != nil {
                hub.connectionBroke(dialled, because: "another process (instance \(from)) listens at \(dialled.remoteAddress) now")
            }
            return
        }
        let destination: WireFormat.Destination?
        do { destination = try WireFormat.destination(ofHeader: first) } catch {
            hub.drops.record(PortDropReason(error), "tcp: \(error)")
            return hub.drops.emitPending()
        }
        guard let destination else {
            hub.drops.record(.noSuchPort, "tcp: a version-\(first[4]) message names no destination (tcp carries version 3)")
            return hub.drops.emitPending()
        }
        guard destination.instance == .current else {
            hub.drops.record(.wrongInstance, "tcp: a message for instance \(destination.instance), not this process's \(ProcessInstance.current)")
            return hub.drops.emitPending()
        }
        forward(range, to: destination.portID)
    }

    /// Sends the frames on to the port's own queue; holds them if it is full.
    private func forward(_ range: Range<Int>, to portID: UInt64) {
        guard let socket = forwarder(for: portID) else {
            hub.drops.record(.noSuchPort, "tcp: a message for port \(portID), which this process does not have (closed, or not a tcp port)")
            return hub.drops.emitPending()
        }
        if send(frames[range], on: socket) { return }
        // No room: the frames move out, so that reading can reuse its own.
        let kept = range.map { index -> Message in
            let message = Message()
            frames[index].moveContent(to: message)
            return message
        }
        held = (kept, kept.count, portID)
    }

    /// Sends the first frame without waiting; once libzmq took it, the rest
    /// follow (libzmq takes a multipart message whole). Each frame's
    /// content moves to libzmq, nothing copied.
    private func send(_ message: ArraySlice<Message>, on socket: Socket) -> Bool {
        let first = message.startIndex
        do {
            guard try socket.send(message[first], more: message.count > 1, dontWait: true) else { return false }
            for index in (first + 1)..<message.endIndex { try socket.send(message[index], more: index < message.endIndex - 1) }
        } catch {
            Self.logger.error("tcp: forwarding to a port failed: \(error)")
        }
        return true
    }

    /// Tries the held message again; true while it is still held.
    private func retryHeld() -> Bool {
        guard let (message, count, portID) = held else { return false }
        guard let socket = forwarder(for: portID) else {
            held = nil
            hub.drops.record(.noSuchPort, "tcp: port \(portID) closed while a message for it waited for room")
            hub.drops.emitPending()
            return false
        }
        if send(message[0..<count], on: socket) { held = nil }
        return held != nil
    }

    /// The inproc PUSH to a live tcp port of this process, made on first use.
    private func forwarder(for portID: UInt64) -> Socket? {
        if let known = forwarders[portID] {
            if let port = known.port.port, port.isValid { return known.socket }
            known.socket.close()
            forwarders[portID] = nil
            return nil
        }
        guard let port = PortRegistry.shared.localPort(portID), port.isValid, port.address.reach == .network else { return nil }
        do {
            let socket = try ZMQContext.shared.makeSocket(.push)
            try socket.setSendHighWaterMark(SendChannel.highWaterMark)
            try socket.connect(port.address.inprocEndpoint)
            forwarders[portID] = (WeakPortReference(port), socket)
            return socket
        } catch {
            Self.logger.error("tcp: cannot reach port \(portID) in this process: \(error)")
            return nil
        }
    }

    // MARK: - Connection events

    private func readEvents(of listener: TCPListener) {
        while let event = try? listener.monitor.next(dontWait: true) {
            guard event.kind == .disconnected else { continue }
            let lost = hub.state.withLock { state in
                state.open.values.first { !$0.isDialled && $0.acceptedDescriptor == event.value && $0.brokenError == nil }
            }
            if let lost { hub.connectionBroke(lost, because: "the peer disconnected, or its heartbeats stopped") }
        }
    }

    private func readEvents(of connection: TCPConnection) {
        guard let monitor = connection.monitor else { return }
        while let event = try? monitor.next(dontWait: true) {
            let reason: String? = switch event.kind {
            case .disconnected: "the peer disconnected, or its heartbeats stopped"
            case .closed: "the connection closed"
            case .handshakeFailedAuth: "the server refused this process's key (its authorized-keys file does not list it)"
            case .handshakeFailedProtocol: "the handshake failed: the peer does not speak this security (a wrong server key, or plain text against CURVE)"
            case .handshakeFailedNoDetail: "the handshake failed"
            default: nil
            }
            if let reason, connection.brokenError == nil { hub.connectionBroke(connection, because: reason) }
        }
    }

    /// Connections past the connection bound without a welcome break; the
    /// authorized keys are read again if they changed, and the connections
    /// of revoked keys closed.
    private func housekeeping(_ dialled: [TCPConnection]) {
        let now = MonotonicClock.now()
        for connection in dialled where connection.brokenError == nil && !connection.isReady
            && now &- connection.startedAt >= NetworkHub.connectionBoundNanoseconds {
            hub.connectionBroke(connection, because: "no connection within the tcp connection bound")
        }
        guard now &- lastHousekeeping >= 250_000_000 else { return }
        lastHousekeeping = now
        guard let authorized = hub.state.withLock({ $0.authorized }) else { return }
        let revoked = Set(authorized.refresh().map(\.z85))
        guard !revoked.isEmpty else { return }
        let closing = hub.state.withLock { state in
            state.open.values.filter { !$0.isDialled && $0.clientKey.map(revoked.contains) == true }
        }
        for connection in closing {
            // libzmq has no call to drop one peer of a ROUTER: shutting its
            // socket down makes libzmq see the connection end.
            shutdown(connection.acceptedDescriptor, Int32(SHUT_RDWR))
            hub.connectionBroke(connection, because: "its key was revoked")
        }
    }

    /// Sleeps until a socket may have input, the hub wakes the thread, or a
    /// quarter of a second passes (housekeeping).
    private func waitForInput(_ listeners: [TCPListener], _ dialled: [TCPConnection]) {
        var descriptors = [pollfd(fd: hub.wakeDescriptor, events: Int16(POLLIN), revents: 0)]
        func add(_ descriptor: Int32?) {
            if let descriptor { descriptors.append(pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)) }
        }
        for listener in listeners {
            add(listener.lock.withLock { defer { listener.socket.releaseOwnership() }; return try? listener.socket.fileDescriptor })
            add(try? listener.monitor.fileDescriptor)
        }
        for connection in dialled where connection.brokenError == nil {
            add(connection.socketLock.withLock { defer { connection.socket.releaseOwnership() }; return try? connection.socket.fileDescriptor })
            if let monitor = connection.monitor { add(try? monitor.fileDescriptor) }
        }
        if let held, let socket = forwarders[held.portID]?.socket { add(try? socket.fileDescriptor) }
        _ = poll(&descriptors, nfds_t(descriptors.count), held == nil ? 250 : 20)
        if descriptors[0].revents != 0 {
            var count: UInt64 = 0
            _ = read(hub.wakeDescriptor, &count, 8)
        }
    }

    /// At exit: every socket closed, lingering until `deadline`.
    private func closeEverything(lingerUntil deadline: UInt64) {
        let linger = OutboundFlush.millisecondsLeft(until: deadline)
        let (listeners, open) = hub.state.withLock { state in
            (Array(state.listeners.values), Array(state.open.values))
        }
        for connection in open { connection.close(lingerMilliseconds: linger) }
        for listener in listeners { listener.close(lingerMilliseconds: linger) }
        for (_, forwarder) in forwarders { forwarder.socket.close() }
        forwarders.removeAll()
        finished.fill(.success(()))
    }
}

/// A port the network thread forwards to, held weakly: a closed port's
/// forwarder goes with it.
struct WeakPortReference {
    weak var port: Port?
    init(_ port: Port) { self.port = port }
}
