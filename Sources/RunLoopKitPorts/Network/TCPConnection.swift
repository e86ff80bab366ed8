import Glibc
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The one connection between this process and another over tcp (S-NET-1),
/// carrying both directions: one this process dialled (a DEALER connected
/// to the peer's endpoint), or one the peer dialled into a listener of
/// this process (the listener's ROUTER, the peer named by its routing id,
/// which is its instance). Every send right to the peer's ports sends on
/// it, so a process that only connects still gets its replies.
///
/// A connection is ready once the peer has said which instance it is (the
/// hello and welcome of docs/wire-format.md, "tcp connections"); it breaks
/// once (a disconnect, a missed heartbeat, a failed handshake, another
/// instance at the address, no handshake within the tcp connection bound)
/// and never comes back: libzmq's reconnection is off, so a send right can
/// never reach whatever listens at the address next (S-NET-3).
///
/// Threading: senders on any thread and the network thread share the
/// socket under `socketLock` (the listener's for an accepted connection):
/// libzmq sockets are not thread-safe, and a lock gives the socket one
/// user at a time.
final class TCPConnection: @unchecked Sendable {
    // Which kind of connection is kept in optionals, not in an enum with a
    // payload per case: such an enum keeps its case in the spare bits of
    // the references it holds, where LeakSanitizer sees no pointer (docs/
    // contributing.md, "AddressSanitizer and leaks").
    /// A dialled connection: the DEALER this process connected to the
    /// peer's endpoint.
    let dialledSocket: Socket?
    /// A dialled connection's monitor, which reports its fate.
    let monitor: SocketMonitor?
    /// A dialled connection's reading side (an accepted one's is its listener's).
    let inbound: TCPInbound?
    /// An accepted connection: the listener the peer connected to.
    let listener: TCPListener?
    /// An accepted connection's routing id, which its messages carry.
    let routingID: [UInt8]
    /// The instance the peer is (accepted: said in its hello), or is
    /// expected to be (dialled: the descriptor's, checked by the welcome);
    /// `.any` until the welcome for a connection dialled to whoever
    /// listens (a name lookup at an endpoint), the welcome's from then on.
    var peer: ProcessInstance { state.withLock { $0.peer } }
    /// The peer's address as logs and errors show it.
    let remoteAddress: String
    /// When the connection was started, for the tcp connection bound.
    let startedAt = MonotonicClock.now()
    /// Guards the socket: the connection's own for a dialled one, the
    /// listener's for an accepted one.
    let socketLock: Lock
    /// Filled when the peer said who it is (success) or the connection
    /// broke first (the error).
    private let readiness = Completion<Void>()
    private struct State {
        var peer: ProcessInstance
        var isReady = false
        var broken: PortError?
        /// Why it broke, as metrics count it (with `broken`).
        var end: TCPConnectionEnd?
        /// An accepted connection's file descriptor (for closing it when its
        /// key is revoked) and CURVE key (as the server's ZAP handler allowed it).
        var descriptor: Int32 = -1
        var clientKey: String?
    }
    private let state: Locked<State>
    /// What every send reads first, without the lock: 0 while the
    /// handshake runs, 1 ready, 2 broken (`state` has the details).
    private let status = Atomic<UInt8>(0)

    /// The socket messages to the peer are sent on: the connection's own
    /// (dialled), or its listener's (accepted). Stored, so that a send
    /// reads it without a retain.
    let socket: Socket
    /// The socket's reading side: a dialled connection's own, an accepted one's listener's.
    let readingSide: TCPInbound

    /// Whether the peer reads version-4 descriptors of this process's ports
    /// (`Port.descriptorBytes(relativeLimit:)`): 0 until it said so (its
    /// home frame, after this process's), then one more than the listeners
    /// this process's home frame listed to it. Read by every send that
    /// carries a port.
    let relativeLimit = Atomic<UInt16>(0)
    /// Whether the peer reads version-5 messages (`WireFormat.readsFrame`
    /// came after its home frame): then a small packed message goes to it
    /// as version 5, else as version 3. Read by every packed send.
    private let compactMessages = Atomic<Bool>(false)
    var readsCompactMessages: Bool { compactMessages.load(ordering: .acquiring) }
    /// A dialled connection: how many listeners its hello's home frame listed.
    private let advertisedListeners: Int

    /// The frame a packed message is written into when it is sent, from
    /// a pool, as a send channel does (`SendChannel.framePool`).
    let framePool = FramePool(bufferBytes: SendChannel.pooledFrameBytes, maxBuffers: SendChannel.pooledFrames)

    init(
        dialling socket: Socket, lock: Lock, inbound: TCPInbound, monitor: SocketMonitor, peer: ProcessInstance, address: String,
        advertising listeners: Int
    ) {
        advertisedListeners = listeners
        acceptedPeerHome = nil
        dialledSocket = socket
        self.socket = socket
        readingSide = inbound
        self.monitor = monitor
        self.inbound = inbound
        listener = nil
        routingID = []
        state = Locked(State(peer: peer))
        remoteAddress = address
        socketLock = lock
        inbound.attach(dialled: self)
    }

    /// An accepted connection's peer's home frame, if its hello had one.
    let acceptedPeerHome: TCPHome?

    init(
        acceptedBy listener: TCPListener, routingID: [UInt8], peer: ProcessInstance, home: TCPHome?, address: String,
        descriptor: Int32, clientKey: String?
    ) {
        acceptedPeerHome = home
        advertisedListeners = 0
        dialledSocket = nil
        socket = listener.socket
        readingSide = listener.inbound
        monitor = nil
        inbound = nil
        self.listener = listener
        self.routingID = routingID
        state = Locked(State(peer: peer))
        remoteAddress = address
        socketLock = listener.lock
        state.withLock {
            $0.descriptor = descriptor
            $0.clientKey = clientKey
            $0.isReady = true
        }
        status.store(1, ordering: .releasing)
        readiness.fill(.success(()))
    }

    var isDialled: Bool { dialledSocket != nil }
    var isReady: Bool { status.load(ordering: .acquiring) == 1 }
    var brokenError: PortError? { state.withLock { $0.broken } }
    /// Why it broke, if it did (for metrics).
    var end: TCPConnectionEnd? { state.withLock { $0.end } }
    var acceptedDescriptor: Int32 { state.withLock { $0.descriptor } }
    var clientKey: String? { state.withLock { $0.clientKey } }

    /// How the peer is named in errors: its instance and address.
    var peerDescription: String { "instance \(peer) at \(remoteAddress)" }

    /// The peer reads version-4 descriptors of ports behind the first
    /// `listeners` listeners of this process (those its home frame listed
    /// to the peer, which sent a home frame of its own). Stored once that
    /// frame was sent, so that no message with a version-4 descriptor goes
    /// before it.
    func peerReadsRelativeDescriptors(listing listeners: Int) {
        relativeLimit.store(UInt16(listeners) + 1, ordering: .releasing)
    }

    /// The peer's hello or welcome said it reads version 5. Stored before
    /// the connection is ready (dialled) or known (accepted): a peer reads
    /// every version from its first message on.
    func peerReadsCompactMessages() {
        compactMessages.store(true, ordering: .releasing)
    }

    /// The peer said it is `instance` (its welcome), and sent its home frame
    /// if `sentHome`: ready if that is the
    /// one expected, or if any was (the peer is `instance` from now on);
    /// else broken, since another process listens at the address now.
    /// Whoever reads the connection.
    func welcomed(by instance: ProcessInstance, sentHome: Bool) -> Bool {
        if sentHome { peerReadsRelativeDescriptors(listing: advertisedListeners) }
        let expected = peer
        guard instance == expected || (expected == .any && instance != .any) else {
            breakDown("another process (instance \(instance)) listens at \(remoteAddress) now: the process the port belonged to is gone", end: .replaced)
            return false
        }
        let first: Bool = state.withLock { state in
            guard state.broken == nil, !state.isReady else { return false }
            state.peer = instance
            state.isReady = true
            status.store(1, ordering: .releasing)
            return true
        }
        // Known by its instance before anyone waiting for it goes on.
        if first && expected == .any { NetworkHub.shared.identified(self) }
        if first, let metrics = PortMetrics.current { metrics.connectionOpened(peer: remoteAddress) }
        if first { readiness.fill(.success(())) }
        return first
    }

    /// Marks the connection broken with `reason`; false if it was already.
    /// Sends waiting for it fail, and later ones too.
    @discardableResult
    func breakDown(_ reason: String, end: TCPConnectionEnd) -> Bool {
        let error = PortError.connectionLost(port: "(any)", peer: peerDescription, reason: reason)
        let first: Bool = state.withLock { state in
            guard state.broken == nil else { return false }
            state.broken = error
            state.end = end
            status.store(2, ordering: .releasing)
            return true
        }
        if first { readiness.fill(.failure(error)) }
        return first
    }

    /// The error a send to `port` fails with once the connection broke:
    /// `.unreachable` if it never got ready (no connection was ever made,
    /// S-PORT-4), else `.connectionLost`.
    func lostError(for port: PortAddress) -> PortError? {
        guard status.load(ordering: .acquiring) == 2 else { return nil }
        let (broken, wasReady) = state.withLock { ($0.broken, $0.isReady) }
        guard case let .connectionLost(_, peer, reason)? = broken else { return nil }
        if !wasReady { return .unreachable(port.description, reason: "no connection to \(peer): \(reason)") }
        return .connectionLost(port: port.description, peer: peer, reason: reason)
    }

    /// Waits until the peer said who it is, at most until the tcp
    /// connection bound from the connection's start (S-PORT-4): a send
    /// never waits longer for a connection, whatever its deadline.
    func waitUntilReady(port: PortAddress) throws(PortError) {
        if isReady { return }
        let bound = NetworkHub.connectionBoundNanoseconds
        switch readiness.wait(until: startedAt &+ bound) {
        case .success?: return
        case .failure?: throw lostError(for: port) ?? .unreachable(port.description, reason: "the connection to \(peerDescription) failed")
        case nil:
            breakDown("no connection within the tcp connection bound (\(Duration.nanoseconds(Int64(clamping: bound))))", end: .connectionBound)
            throw .unreachable(port.description, reason: "no connection to \(peerDescription) within the tcp connection bound (\(Duration.nanoseconds(Int64(clamping: bound)))): nothing answers there, the handshake did not finish, or the keys do not match")
        }
    }

    // MARK: - Sending (any thread)

    /// Sends one packed message of `packedSize` bytes, written by `write`
    /// where libzmq sends it from; waits for room until `deadline` (the
    /// socket lock released meanwhile, so that the network thread goes on
    /// reading), and fails at once once the connection broke.
    /// `port` names the destination in errors only: made then, so that a
    /// send copies no address.
    func send(
        packedSize: Int, deadline: SendDeadline, port: @autoclosure () -> PortAddress,
        write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(PortError) {
        try sendFrame(deadline: deadline, port: port()) { (socket) throws(ZMQError) -> Bool in
            try socket.send(byteCount: packedSize, from: framePool, dontWait: true, write: write)
        }
    }

    /// Sends the routing frame and one frame that `send` sends, waiting for
    /// room as `send(packedSize:…)` says.
    @inline(__always)
    private func sendFrame(
        deadline: SendDeadline, port: @autoclosure () -> PortAddress, _ send: (Socket) throws(ZMQError) -> Bool
    ) throws(PortError) {
        if !isReady { try waitUntilReady(port: port()) }
        var waitUntil: UInt64?
        while true {
            let sent: Bool = try withSocket(port: port()) { (socket) throws(PortError) -> Bool in
                guard try sendRoutingFrame(on: socket, port: port()) else { return false }
                return try zeroMQ { () throws(ZMQError) in try send(socket) }
            }
            if sent { return }
            try waitForRoom(port: port(), until: &waitUntil, deadline: deadline)
        }
    }

    /// Sends one message of at most `capacity` bytes, written by `write`,
    /// which returns its size (a version-5 message, `WireFormat.writeCompact`),
    /// as `send(packedSize:…)` does.
    func send(
        upTo capacity: Int, deadline: SendDeadline, port: @autoclosure () -> PortAddress,
        write: (UnsafeMutableRawBufferPointer) -> Int
    ) throws(PortError) {
        try sendFrame(deadline: deadline, port: port()) { (socket) throws(ZMQError) -> Bool in
            try socket.send(upTo: capacity, from: framePool, dontWait: true, write: write)
        }
    }

    /// Sends a large message as its frames, as `send(packedSize:…)` does.
    func send(_ frames: OutgoingFrames, deadline: SendDeadline, port: PortAddress) throws(PortError) {
        try waitUntilReady(port: port)
        var waitUntil: UInt64?
        while true {
            let sent: Bool = try withSocket(port: port) { (socket) throws(PortError) -> Bool in
                guard try sendRoutingFrame(on: socket, port: port) else { return false }
                guard try sendFrame(0, of: frames, on: socket) else { return false }
                for index in 1..<frames.count where try !sendFrame(index, of: frames, on: socket) {
                    breakDown("the connection broke in the middle of a message", end: .lost)
                    throw lostError(for: port)!
                }
                return true
            }
            if sent { return }
            try waitForRoom(port: port, until: &waitUntil, deadline: deadline)
        }
    }

    /// Sends a control frame (a hello or welcome) and, if given, this
    /// process's home frame after it in the same message, then, if
    /// `reads`, its reads frame (`WireFormat.readsFrame`); never waits.
    /// Network thread or the dialling thread, before anyone else can send
    /// on the socket.
    func sendControl(_ bytes: [UInt8], home: [UInt8]? = nil, reads: Bool = false) throws(ZMQError) -> Bool {
        socketLock.lock()
        defer {
            socket.releaseOwnership()
            socketLock.unlock()
        }
        if !isDialled {
            guard try Self.send(routingID, on: socket, more: true) else { return false }
        }
        guard let home else { return try Self.send(bytes, on: socket, more: false) }
        // Once libzmq took a message's first frame, it takes the rest.
        guard try Self.send(bytes, on: socket, more: true) else { return false }
        guard reads else { return try Self.send(home, on: socket, more: false) }
        _ = try Self.send(home, on: socket, more: true)
        return try Self.send(WireFormat.readsFrame, on: socket, more: false)
    }

    /// Sends `bytes` as one frame without waiting; false when there is no room.
    private static func send(_ bytes: [UInt8], on socket: Socket, more: Bool) throws(ZMQError) -> Bool {
        // withUnsafeBytes rethrows untyped errors: the typed one travels in a Result.
        let outcome: Result<Bool, ZMQError> = bytes.withUnsafeBytes { raw in
            Result { () throws(ZMQError) in try socket.send(raw, more: more, dontWait: true) }
        }
        return try outcome.get()
    }

    /// Runs `body` with the socket, its lock held, failing at once if the
    /// connection broke; afterwards the socket is looked at for input,
    /// since a send may have taken the readiness signal its readers wait
    /// for (`TCPInbound.lookAfterSend`).
    private func withSocket<R>(port: @autoclosure () -> PortAddress, _ body: (Socket) throws(PortError) -> R) throws(PortError) -> R {
        let result: R
        do {
            socketLock.lock()
            defer {
                socket.releaseOwnership()
                socketLock.unlock()
            }
            if status.load(ordering: .acquiring) == 2, let error = lostError(for: port()) { throw error }
            result = try body(socket)
            readingSide.lookAfterSend()
        }
        // With the lock released: a read this thread's loop owes the socket is made now.
        readingSide.drainIfOwedHere()
        return result
    }

    /// An accepted connection's messages start with the peer's routing id.
    /// False when there is no room; a peer gone (EHOSTUNREACH, the
    /// ROUTER's "mandatory" refusal) breaks the connection.
    private func sendRoutingFrame(on socket: Socket, port: @autoclosure () -> PortAddress) throws(PortError) -> Bool {
        if isDialled { return true }
        do throws(ZMQError) {
            return try Self.send(routingID, on: socket, more: true)
        } catch where error.code == EHOSTUNREACH {
            breakDown("the peer is no longer connected", end: .lost)
            throw lostError(for: port())!
        } catch {
            throw .zeroMQ(error)
        }
    }

    private func sendFrame(_ index: Int, of frames: OutgoingFrames, on socket: Socket) throws(PortError) -> Bool {
        do { return try frames.send(index, on: socket) } catch let error as ZMQError { throw .zeroMQ(error) } catch {
            throw .invalidPort("\(peerDescription): \(error)")
        }
    }

    private func zeroMQ<R>(_ body: () throws(ZMQError) -> R) throws(PortError) -> R {
        do { return try body() } catch { throw .zeroMQ(error) }
    }

    /// No room: waits up to `validityCheckMilliseconds` at a time for the
    /// socket to take a message, with the lock released, until the
    /// deadline (read from the clock the first time only).
    private func waitForRoom(port: PortAddress, until waitUntil: inout UInt64?, deadline: SendDeadline) throws(PortError) {
        if let error = lostError(for: port) { throw error }
        let until = waitUntil ?? deadline.instant()
        waitUntil = until
        let now = MonotonicClock.now()
        guard now < until else {
            throw .timedOut(TimeoutError(operation: "send to port \(port.description) over tcp to \(peerDescription): its queue stayed full"))
        }
        let descriptor: Int32? = socketLock.withLock {
            defer { socket.releaseOwnership() }
            guard !readingSide.lookForRoom() else { return nil }
            return try? socket.fileDescriptor
        }
        guard let descriptor else { return }
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        _ = poll(&poller, 1, Int32(min((until - now) / 1_000_000 + 1, UInt64(SendChannel.validityCheckMilliseconds))))
    }

    /// Closes a dialled connection's socket and monitor (network thread,
    /// or exit); an accepted one's socket is its listener's.
    func close(lingerMilliseconds: Int32) {
        guard let socket = dialledSocket, let monitor else { return }
        socketLock.withLock {
            try? SocketMonitor.stop(monitoring: socket)
            try? socket.setLinger(milliseconds: lingerMilliseconds)
            socket.close()
        }
        monitor.close()
        inbound?.discardHeld()
    }
}
