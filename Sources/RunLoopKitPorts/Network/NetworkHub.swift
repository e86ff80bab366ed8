internal import CLinuxSupport
import FoundationEssentials
import Glibc
import Logging
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Everything this process does over tcp (S-NET-1..3), in one place: its
/// ZeroMQ context, the ZAP handler that decides which clients its
/// listeners accept (S-NET-2), its listeners (one per bind address), its
/// connections (one per remote process), and the network thread that reads
/// them all when no loop does, hands each message to its port, and learns of a
/// connection's end from its monitor (`NetworkThread`).
///
/// Made on first use: a process that never uses tcp starts no thread and
/// loads no key.
final class NetworkHub: @unchecked Sendable {
    static let shared = NetworkHub()
    /// Whether `shared` was made (a flush makes none, `flushIfStarted`).
    static let isMade = Atomic<Bool>(false)
    static let logger = Logger(label: "RunLoopKit.Network")
    /// The ZAP domains of CURVE and plain-text listeners.
    static let curveDomain = "runloopkit"
    static let plainTextDomain = "runloopkit-plain"

    /// tcp's own context: what leaves the process over tcp is flushed and
    /// the context terminated at exit, within the exit bound.
    let context: ZMQContext = {
        do { return try ZMQContext(blockyTermination: true) } catch {
            fatalError("RunLoopKit: cannot create the ZeroMQ context for tcp: \(error)")
        }
    }()
    /// What the endpoint dropped: messages for another instance or for no
    /// port, and malformed ones it could not route.
    let drops = DropAccount(portName: "tcp endpoint")
    /// Loops whose network reader is scheduled: while there is one, the
    /// network thread leaves reading to them (`NetworkThread`).
    let activeReaders = Atomic<Int>(0)
    /// Sockets whose reading side holds a message for a full port.
    let holdingInbounds = Atomic<Int>(0)
    /// True while a socket's look for input after a send is owed
    /// (`TCPInbound.lookAfterSend`): the network thread makes it.
    let looksOwed = Atomic<Bool>(false)
    /// Wakes the network thread (an eventfd).
    let wakeDescriptor: Int32 = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))

    struct State {
        var listeners: [String: TCPListener] = [:]
        /// The live connection to each remote process.
        var connections: [ProcessInstance: TCPConnection] = [:]
        /// Every connection not yet closed, broken ones until the network
        /// thread closes them.
        var open: [ObjectIdentifier: TCPConnection] = [:]
        var zap: ZAPHandler?
        var authorized: AuthorizedKeys?
        var thread: NetworkThread?
        var exiting = false
        /// The network reader of each loop that serves tcp ports.
        var readers: [ObjectIdentifier: LoopNetworkReader] = [:]

        /// Every socket's reading side: each listener's and each open
        /// dialled connection's (an accepted connection reads through its
        /// listener's socket).
        var inbounds: [TCPInbound] { listeners.values.map(\.inbound) + open.values.compactMap(\.inbound) }
    }

    let state = Locked(State())
    /// Bumped whenever a listener or connection comes or goes: the network
    /// thread reads its lists of sockets again only then.
    let generation = Atomic<UInt64>(0)

    private init() { Self.isMade.store(true, ordering: .releasing) }

    // MARK: - Bounds

    /// How long a send waits for a tcp connection (S-PORT-4): 3 s, or
    /// `RUNLOOPKIT_TCP_CONNECTION_BOUND` seconds.
    static var connectionBoundNanoseconds: UInt64 { connectionBound.load(ordering: .relaxed) }
    static let connectionBound = Atomic<UInt64>(seconds(fromEnvironment: "RUNLOOPKIT_TCP_CONNECTION_BOUND", default: 3))
    /// How long a connection may stay silent before it is taken for dead
    /// (ZMQ_HEARTBEAT_TIMEOUT): 10 s, or `RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT`
    /// seconds. Heartbeats go every quarter of it, so a dead peer, host or
    /// link is known within 1.25 times it (S-NET-3). Not less by default:
    /// a false death is for good (docs/ports.md, "Bounds").
    static var heartbeatTimeoutNanoseconds: UInt64 { heartbeatTimeout.load(ordering: .relaxed) }
    static let heartbeatTimeout = Atomic<UInt64>(
        heartbeatTimeout(clamping: seconds(
            fromEnvironment: "RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT", default: 10,
            most: Double(longestHeartbeatTimeoutNanoseconds / 1_000_000_000))))
    /// The longest heartbeat timeout: libzmq keeps the time-to-live that
    /// goes with it (ZMQ_HEARTBEAT_TTL) in tenths of a second in 16 bits,
    /// and refuses a longer one, which would fail every tcp socket's options.
    static let longestHeartbeatTimeoutNanoseconds: UInt64 = 6_553_000_000_000

    /// `nanoseconds` as a heartbeat timeout: 0.1 s at least, 6,553 s at most.
    static func heartbeatTimeout(clamping nanoseconds: UInt64) -> UInt64 {
        min(max(nanoseconds, 100_000_000), longestHeartbeatTimeoutNanoseconds)
    }

    private static func seconds(fromEnvironment name: String, default value: Double, most: Double = 1e6) -> UInt64 {
        guard let text = getenv(name).map({ String(cString: $0) }) else { return UInt64(value * 1e9) }
        guard let seconds = Double(text), seconds.isFinite, seconds > 0, seconds < 1e6 else {
            logger.warning("\(name)=\(text) is not a number of seconds; \(value) s it is")
            return UInt64(value * 1e9)
        }
        guard seconds <= most else {
            logger.warning("\(name)=\(text) is more than its most, \(Int(most)) s; \(Int(most)) s it is")
            return UInt64(most * 1e9)
        }
        return UInt64(seconds * 1e9)
    }

    /// The options every tcp socket gets: heartbeats, the queue and frame
    /// limits of ports, no reconnection (a connection that broke stays
    /// broken, S-NET-3), the handshake within the connection bound.
    static func applyConnectionOptions(
        to socket: Socket, heartbeatTimeout: UInt64 = heartbeatTimeoutNanoseconds
    ) throws(ZMQError) {
        let timeout = Duration.nanoseconds(Int64(clamping: heartbeatTimeout))
        try socket.setHeartbeat(interval: timeout / 4, timeout: timeout, ttl: timeout)
        try socket.setHandshakeInterval(.nanoseconds(Int64(clamping: connectionBoundNanoseconds)))
        try socket.setReconnectInterval(nil)
        try socket.setSendHighWaterMark(SendChannel.highWaterMark)
        try socket.setReceiveHighWaterMark(PortReceiver.highWaterMark)
        try socket.setMaxMessageSize(Int64(WireFormat.maxFrameBytes))
        try socket.setLinger(milliseconds: SendChannel.lingerMilliseconds)
        try socket.setTCPKeepalive(true)
    }

    // MARK: - Listeners

    /// The listener for `configuration`'s bind address and port, made (and
    /// bound, after the ZAP handler) the first time.
    func listener(for configuration: TCPEndpoint) throws(PortError) -> TCPListener {
        let key = "\(configuration.bindAddress ?? "")|\(configuration.port)|\(configuration.security)"
        let keys = configuration.security == .curve ? try NetworkKeys.keyPair() : nil
        let listener: TCPListener = try state.withLock { (state) throws(PortError) -> TCPListener in
            if let existing = state.listeners[key] {
                if let advertised = configuration.advertisedHost,
                   TCPTransport.hostAndPort(existing.advertisedEndpoint)?.host != advertised {
                    throw .unreachable(configuration.description, reason: "this process already listens at that address advertising \(existing.advertisedEndpoint); one endpoint per bind address")
                }
                return existing
            }
            guard !state.exiting else { throw .invalidPort("\(configuration): this process is exiting") }
            try startZAPHandler(&state)
            let made = try TCPListener(configuration, context: context, keys: keys, position: state.listeners.count)
            state.listeners[key] = made
            assignReader(to: made.inbound, in: &state)
            generation.wrappingAdd(1, ordering: .releasing)
            return made
        }
        startThread()
        // Names are answered behind every endpoint (S-NET-4).
        TCPNameService.start()
        return listener
    }

    /// The position of the listener that advertises `endpoint` with
    /// `serverKey` in this process's home frame; nil past the frame's limit.
    func listenerPosition(advertising endpoint: String, serverKey: CurveKey?) -> UInt8? {
        state.withLock { state in
            state.listeners.values.first { $0.advertisedEndpoint == endpoint && $0.serverKey == serverKey }
        }.flatMap { $0.position < WireFormat.maxHomeListeners ? UInt8($0.position) : nil }
    }

    /// This process's home frame, which says it reads version-4
    /// descriptors and lists its listeners by position, and how many it
    /// lists (the peer may read version 4 of a port behind one of those).
    /// State lock held.
    static func homeFrame(_ state: State) -> (frame: [UInt8], listeners: Int) {
        let listeners = state.listeners.values.sorted { $0.position < $1.position }.prefix(WireFormat.maxHomeListeners)
        let process = ProcessIdentity.current
        let frame = WireFormat.encodeHome(
            pid: process.pid, startTime: process.startTime,
            listeners: listeners.map { TCPHome.Listener(endpoint: $0.advertisedEndpoint, serverKey: $0.serverKey) })
        return (frame, listeners.count)
    }

    /// `homeFrame` under the state lock.
    func homeFrame() -> (frame: [UInt8], listeners: Int) { state.withLock { Self.homeFrame($0) } }

    /// The ZAP handler, bound before any listener (libzmq lets any CURVE
    /// client in when no handler answers). State lock held.
    private func startZAPHandler(_ state: inout State) throws(PortError) {
        guard state.zap == nil else { return }
        let authorized = AuthorizedKeys(path: try NetworkKeys.authorizedKeysPath())
        state.authorized = authorized
        do {
            state.zap = try ZAPHandler(context: context) { request in
                NetworkHub.authorize(request, by: authorized)
            }
        } catch {
            throw .zeroMQ(error)
        }
    }

    /// A client is let in when it speaks CURVE with a key the
    /// authorized-keys file lists (read again if it changed), or connects
    /// to a plain-text listener, which was asked for by name.
    private static func authorize(_ request: ZAPHandler.Request, by authorized: AuthorizedKeys) -> ZAPHandler.Decision {
        if request.domain == plainTextDomain && request.mechanism == "NULL" { return .allow(userID: "plain text") }
        guard request.domain == curveDomain, request.mechanism == "CURVE", let key = request.clientKey else {
            return .deny(reason: "mechanism \(request.mechanism) is not accepted here")
        }
        _ = authorized.refresh()
        guard authorized.allows(key) else {
            logger.notice("tcp: refused a client at \(request.address) whose key \(key.z85) the authorized-keys file does not list")
            return .deny(reason: "key not authorized")
        }
        return .allow(userID: key.z85)
    }

    // MARK: - Connections

    /// The connection a send right to `endpoint`'s process sends on: the
    /// live one in either direction, or a new one dialled to its listener.
    func connection(for endpoint: TCPTransport.Endpoint, port: String) throws(PortError) -> TCPConnection {
        if let live = liveConnection(to: endpoint.instance) { return live }
        guard let listener = endpoint.listener else {
            throw .unreachable(port, reason: "its process (instance \(endpoint.instance)) only connects, and has no connection to this one")
        }
        return try connection(dialling: listener, expecting: endpoint.instance, serverKey: endpoint.serverKey, port: port) { state in
            state.connections[endpoint.instance].flatMap { $0.brokenError == nil ? $0 : nil }
        }
    }

    /// A connection to whichever process listens at `listener` (a name
    /// lookup at an endpoint, S-NET-4): a live one this process dialled
    /// there, or a new one whose hello expects any instance; its welcome
    /// says who answered (`identified`). Wait for it with `waitUntilReady`.
    func connection(toWhoeverListensAt listener: String, serverKey: CurveKey?, port: String) throws(PortError) -> TCPConnection {
        try connection(dialling: listener, expecting: .any, serverKey: serverKey, port: port) { state in
            state.connections.values.first { $0.isDialled && $0.remoteAddress == listener && $0.brokenError == nil }
        }
    }

    /// The live connection `reuse` finds, or a new one dialled to
    /// `listener`, known by `instance` at once unless it expects any.
    private func connection(
        dialling listener: String, expecting instance: ProcessInstance, serverKey: CurveKey?, port: String,
        reuse: (State) -> TCPConnection?
    ) throws(PortError) -> TCPConnection {
        let keys: CurveKeyPair? = serverKey == nil ? nil : try NetworkKeys.keyPair()
        let connection: TCPConnection = try state.withLock { (state) throws(PortError) -> TCPConnection in
            if let live = reuse(state) { return live }
            guard !state.exiting else { throw .invalidPort("\(port): this process is exiting") }
            let made = try dial(listener, instance: instance, serverKey: serverKey, keys: keys, home: Self.homeFrame(state))
            if instance != .any { state.connections[instance] = made }
            state.open[ObjectIdentifier(made)] = made
            if let inbound = made.inbound { assignReader(to: inbound, in: &state) }
            generation.wrappingAdd(1, ordering: .releasing)
            return made
        }
        startThread()
        wakeNetworkThread()
        // A socket nobody has read yet signals nothing when its first
        // message comes (libzmq signals ZMQ_FD for a reader that found its
        // queue empty): its reader reads it once now, so that the welcome
        // wakes it. Left to the quarter-second reading, a first send to a
        // new peer waited up to 250 ms for it.
        if let inbound = connection.inbound, connection.brokenError == nil, !connection.isReady { readAgain(inbound) }
        return connection
    }

    /// The live connection to `instance`'s process, if there is one.
    func liveConnection(to instance: ProcessInstance) -> TCPConnection? {
        state.withLock { $0.connections[instance] }.flatMap { $0.brokenError == nil ? $0 : nil }
    }

    /// A connection dialled to whoever listens learned from its welcome
    /// which process that is: it is that process's connection from now on,
    /// unless a live one is known already (then it closes once its lookup
    /// is answered, `closeIfSpare`). Called by the connection before it is
    /// ready, so that whoever waited for it finds it.
    func identified(_ connection: TCPConnection) {
        state.withLock { state in
            if let live = state.connections[connection.peer], live.brokenError == nil { return }
            state.connections[connection.peer] = connection
        }
    }

    /// Marks `connection` broken if it is not its peer's connection (a
    /// second one, dialled for a lookup while another was made: one
    /// connection per remote process); the network thread closes it.
    func closeIfSpare(_ connection: TCPConnection) {
        let spare = state.withLock { $0.connections[connection.peer] !== connection }
        guard spare, connection.breakDown("a second connection to the process, made for a name lookup, is not needed", end: .closed) else { return }
        wakeNetworkThread()
    }

    private func dial(
        _ listener: String, instance: ProcessInstance, serverKey: CurveKey?, keys: CurveKeyPair?, home: (frame: [UInt8], listeners: Int)
    ) throws(PortError) -> TCPConnection {
        do {
            let socket = try context.makeSocket(.dealer)
            let lock = Lock()
            try Self.applyConnectionOptions(to: socket)
            try socket.setRoutingID(Data(WireFormat.instanceBytes(.current)))
            if listener.contains("[") { try socket.setIPv6(true) }
            if let serverKey, let keys { try socket.setCurveClient(keys, serverKey: serverKey) }
            let monitor = try SocketMonitor(watching: socket, in: context)
            try socket.connect(listener)
            socket.releaseOwnership()
            let inbound = try TCPInbound(hub: self, socket: socket, socketLock: lock)
            let connection = TCPConnection(
                dialling: socket, lock: lock, inbound: inbound, monitor: monitor, peer: instance, address: listener,
                advertising: home.listeners)
            // Queued until the connection is made: the first message the
            // peer reads, the hello and this process's home frame.
            _ = try connection.sendControl(WireFormat.encodeControl(.hello(from: .current, expecting: instance)), home: home.frame, reads: true)
            if serverKey == nil { Self.logger.warning("tcp: connecting to \(listener) in PLAIN TEXT, as its descriptor says") }
            return connection
        } catch {
            throw .zeroMQ(error)
        }
    }

    /// A peer dialled into `listener` and said who it is: its connection,
    /// unless a live one to that process is known already. Network thread.
    func accepted(_ connection: TCPConnection) {
        state.withLock { state in
            state.open[ObjectIdentifier(connection)] = connection
            generation.wrappingAdd(1, ordering: .releasing)
            if let live = state.connections[connection.peer], live.brokenError == nil { return }
            state.connections[connection.peer] = connection
        }
        if let metrics = PortMetrics.current { metrics.connectionOpened(peer: connection.remoteAddress) }
    }

    /// Why `address` cannot be reached at all, decided at once (S-PORT-8):
    /// a process that only connects and has no connection here.
    func reachabilityProblem(_ address: PortAddress, _ endpoint: TCPTransport.Endpoint) -> PortError? {
        guard endpoint.listener == nil else { return nil }
        if liveConnection(to: endpoint.instance) != nil { return nil }
        return .unreachable(address.description, reason: "its process (instance \(endpoint.instance)) only connects, and has no connection to this one")
    }

    /// `connection` broke: every send right to its peer's ports is invalid
    /// from now on (S-NET-3), with the reason; its socket is closed.
    /// Network thread.
    func connectionBroke(_ connection: TCPConnection, because reason: String, end: TCPConnectionEnd) {
        let first = connection.breakDown(reason, end: end)
        let peer = connection.peer
        // A spare connection (a lookup's, while another was made) or one
        // that never learned its peer leaves the peer's send rights alone.
        let peerLost: Bool? = state.withLock { state in
            // Closed already (a second report of its end): nothing more to do.
            guard state.open[ObjectIdentifier(connection)] != nil else { return nil }
            let wasPeers = state.connections[peer] === connection
            if wasPeers { state.connections[peer] = nil }
            state.open[ObjectIdentifier(connection)] = nil
            // Its socket closes: no reader may watch its descriptor again.
            connection.inbound?.closing()
            generation.wrappingAdd(1, ordering: .releasing)
            return peer != .any && (wasPeers || state.connections[peer] == nil)
        }
        guard let peerLost else { return }
        connection.close(lingerMilliseconds: 0)
        connection.listener?.inbound.forgetHome(of: connection)
        if let metrics = PortMetrics.current { metrics.connectionEnded(peer: connection.remoteAddress, reason: connection.end ?? end) }
        if first { Self.logger.info("tcp: the connection to \(connection.peerDescription) broke: \(reason)") }
        guard peerLost else { return }
        PortRegistry.shared.connectionLost(to: peer) { port in
            connection.lostError(for: port.address) ?? .connectionLost(port: port.description, peer: connection.peerDescription, reason: reason)
        }
    }

    /// A port's queue had been full and has room: the network thread, which
    /// retries a held message, is woken if a socket holds one.
    func roomMade() {
        if holdingInbounds.load(ordering: .acquiring) > 0 { wakeNetworkThread() }
    }

    /// A send skipped its look for input: the network thread is woken to
    /// make it, unless it already watches for owed looks.
    func lookOwed() {
        if !looksOwed.exchange(true, ordering: .acquiringAndReleasing) { wakeNetworkThread() }
    }

    // MARK: - The network thread

    private func startThread() {
        let start: Bool = state.withLock { state in
            guard state.thread == nil, !state.exiting else { return false }
            state.thread = NetworkThread(hub: self)
            return true
        }
        if start {
            state.withLock { $0.thread }?.start()
            installAtExit()
        }
    }

    func wakeNetworkThread() {
        var one: UInt64 = 1
        _ = write(wakeDescriptor, &one, 8)
    }

    private static let atExitInstalled = Atomic<Bool>(false)

    private func installAtExit() {
        guard !Self.atExitInstalled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        atexit { NetworkHub.shared.flushAtExit() }
    }

    /// At exit, within the exit bound (S-PORT-4, S-NET-3): the network
    /// thread closes every socket with what is left of the bound as its
    /// linger, then the context is terminated on a thread of its own, which
    /// waits for libzmq to write what it accepted; whatever is left when
    /// the bound runs out is lost, and the loss is logged.
    private func flushAtExit() {
        let started = MonotonicClock.now()
        let deadline = started &+ min(ExitBound.nanoseconds, UInt64.max / 2)
        let thread: NetworkThread? = state.withLock { state in
            state.exiting = true
            return state.thread
        }
        guard let thread else { return }
        thread.stop(lingerUntil: deadline)
        wakeNetworkThread()
        let closed = thread.finished.wait(until: deadline) != nil
        // Filled with when the context's termination ended: libzmq had
        // then written everything, or the sockets' linger (what was left
        // of the bound) ran out.
        let terminated = Completion<UInt64>()
        if closed {
            var handle = pthread_t()
            // U-NETWORK-THREADS (docs/unsafe-sites.md).
            let box = Unmanaged.passRetained(terminated)
            pthread_create(&handle, nil, { raw in
                let terminated = Unmanaged<Completion<UInt64>>.fromOpaque(raw!).takeRetainedValue()
                NetworkHub.shared.state.withLock { $0.zap }?.close()
                NetworkHub.shared.context.terminate()
                terminated.fill(.success(MonotonicClock.now()))
                return nil
            }, box.toOpaque())
            pthread_detach(handle)
        }
        // Ended by the deadline, not merely seen by it: a termination that
        // the linger ended, just past the deadline, left messages unwritten
        // even when this wait wakes late enough to see it.
        let endedInTime: Bool = if closed, case let .success(at)? = terminated.wait(until: deadline) { at < deadline } else { false }
        if !endedInTime {
            Self.logger.error("exit: tcp connections still held unwritten messages when the exit bound (\(ExitBound.nanoseconds / 1_000_000) ms, Port.exitBound) ran out; they are lost")
        }
    }
}
