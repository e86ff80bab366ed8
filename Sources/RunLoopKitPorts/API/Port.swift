import Glibc
import Logging
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A port: an NSMachPort-like endpoint for `PortMessage`s (S-PORT-1).
///
/// A *local* port receives: schedule it in one or more modes of one loop, and
/// its message handler runs on that loop's thread for each message, up to
/// `maxMessagesPerCallout` of them a pass (it is a Source1, S-SRC1-1). Any
/// thread may send to it; with `.ipc` transport,
/// so may any process of the same user, through the port's socket in the
/// per-user runtime directory. A port that arrives in a message is a *send
/// right* to the original port: sending to it reaches the original (S-PORT-3).
/// Within one process, a port that comes back is the very same object.
///
/// ```swift
/// let port = try Port(transport: .inproc)
/// port.setMessageHandler { message in
///     print("msgid", message.msgid, "on", RunLoop.current.threadName)
///     try? message.replyPort?.send(msgid: message.msgid, before: Date() + 1)
/// }
/// try port.schedule(in: worker.runLoop!, forMode: .default)
/// // any thread:
/// try port.send(msgid: 1, components: [.data(Data("hi".utf8))], before: Date() + 1)
/// ```
///
/// Sending takes a deadline and never drops (S-PORT-4): when the port's
/// queue is full, `send` waits for room until the deadline, then throws
/// `PortError.timedOut` having sent nothing. Messages from one thread to one
/// port arrive in order, each once.
///
/// Threading: every method may be called from any thread. The message
/// handler runs on the loop the port is scheduled on. `invalidate()` closes a
/// local port and tells its invalidation handlers (NSPortDidBecomeInvalid);
/// a send right to a port in a process that has exited becomes invalid by
/// itself, within the time `ProcessWatcher` documents (S-PORT-5).
public final class Port: @unchecked Sendable, Hashable, CustomStringConvertible {
    // @unchecked Sendable: what changes is in `state` (behind its lock),
    // atomic, or behind `handlerLock` (the message path's, issue 9).

    /// How far a local port can be reached.
    public enum Transport: Sendable, Hashable {
        /// From this process only (ZeroMQ inproc): the fastest. Registering
        /// such a port under a name makes it reachable through that name
        /// (`PortNameServer.register`), and only through it.
        case inproc
        /// Also from other processes of the same user (ZeroMQ ipc).
        case ipc
        /// Also from other hosts (ZeroMQ tcp, CURVE by default), behind
        /// this process's endpoint for `endpoint`'s bind address, or only
        /// over connections this process makes (`TCPEndpoint.connectingOnly`).
        case tcp(TCPEndpoint)
    }

    let address: PortAddress
    /// How far from this process the port is (`PortAddress.distance`),
    /// decided once: every send checks the ports it carries against it.
    let distance: PortRoute.Reach
    /// The port's descriptor (docs/wire-format.md), made once: every message
    /// that carries this port as its reply port or a component sends it;
    /// and a local tcp port's version-4 descriptor, sent instead over a
    /// connection whose peer reads it (`descriptorBytes(relativeLimit:)`).
    let descriptorBytes: [UInt8]
    let relativeDescriptor: [UInt8]?
    /// The receiving half; nil for a send right.
    let receiver: PortReceiver?
    /// Mirrors `state.lifecycle` for the message path, which reads it on
    /// every send without a lock; `state` holds the reason.
    let valid = Atomic<Bool>(true)
    /// `maxMessagesPerCallout`.
    let batchLimit = Atomic<Int>(Port.defaultMaxMessagesPerCallout)

    /// A port's life (S-PORT-5): open until invalidated (by `invalidate()`,
    /// its owner process's exit, or its socket vanishing), which is final.
    enum Lifecycle {
        case open
        case invalidated(PortError)
    }

    /// What changes rarely: lifecycle, scheduling, handlers, names.
    struct State {
        var lifecycle = Lifecycle.open
        /// The Source1 through which the port's loop receives.
        var source: SocketSource?
        var invalidationHandlers: [(token: InvalidationHandlerToken, body: @Sendable (Port) -> Void)] = []
        /// Handlers of an invalidation decided where no user code may run
        /// (under a send channel's lock), waiting for the thread that
        /// decided it to release that lock and run them.
        var pendingInvalidationHandlers: [@Sendable (Port) -> Void] = []
        var nextHandlerID: UInt64 = 0
        /// Names this port is registered under (S-PORT-6).
        var registeredNames: [String] = []
        /// The name a send right was looked up under.
        var lookedUpName: String?
        /// The port's series in the attached metrics recorder (`metricsSeries()`).
        var metrics: PortMetricsBinding?
    }

    /// Behind its own lock; the message path reads none of it.
    let state = Locked(State())
    /// The send channel, made on the first send and kept until deinit: the
    /// bits of a retained `Unmanaged<SendChannel>`, or 0. Read without a
    /// lock, because every send reads it, and a lock that the receiving
    /// thread takes too would bounce between the two threads on every message.
    // U-SEND-CHANNEL (docs/unsafe-sites.md).
    let channelBits = Atomic<UInt>(0)
    /// Guards `handler` alone, for the same reason: the loop thread reads it
    /// for every message, senders never.
    let handlerLock = Lock()
    // Guarded by handlerLock.
    // @exclusivity(unchecked): read and written with `handlerLock` held only.
    // U-HANDLER (docs/unsafe-sites.md).
    @exclusivity(unchecked) var handler: MessageHandler?
    /// Counts the changes of `handler` (written with `handlerLock` held): a
    /// batch reads the handler once and then, for each message, only this
    /// number, taking the lock again only when it moved.
    let handlerVersion = Atomic<UInt64>(0)
    /// The port as the tap's records name it (`TapNames`): its tap id in
    /// the low 32 bits (0: none yet), and in the high 32 the generation of
    /// its name that was announced. A name registered or looked up bumps
    /// `tapNameGeneration`, so that the next event announces the new name;
    /// an event reads the two with two loads and no lock.
    let tapIdentity = Atomic<UInt64>(0)
    let tapNameGeneration = Atomic<UInt32>(1)
    /// Set for a port whose handler writes its deliveries' tap records
    /// itself (`TapActorCall`): a distributed actor system's ports, which
    /// know the call only once they have decoded it.
    let tapDeliveryInHandler = Atomic<Bool>(false)

    private static let nextPortID = Atomic<UInt64>(1)
    static let logger = Logger(label: "RunLoopKit.Port")
    /// Ports alive in this process (local ports and send rights), for leak
    /// tests. Changed in `init` and `deinit` only, never per message.
    static let liveCount = Atomic<Int>(0)
    /// Keeps the port's side table visible to LeakSanitizer: every port is
    /// weakly referenced (by the registry), and some live until exit (a send
    /// right the registry keeps, a thread's reply port).
    private var sideTableAnchor = SideTableAnchor()

    /// Makes a local port, which can receive.
    ///
    /// The transport is always named, `try Port(transport: .inproc)`: there
    /// is no `Port()`, because in a file that also imports Foundation that
    /// spelling would quietly make Foundation's `Port`, which traps on Linux.
    /// - Parameter transport: `.inproc` (this process only) or `.ipc` (other
    ///   processes of this user too).
    /// - Throws: `PortError` if libzmq or the runtime directory refuses.
    public convenience init(transport: Transport) throws(PortError) {
        try self.init(transport: transport, reservedID: Self.nextPortID.wrappingAdd(1, ordering: .relaxed).oldValue)
    }

    /// A local port with the id `portID`: a new one (`init(transport:)`),
    /// or one no other port can have (`TCPNameService.portID`, 0: ids
    /// start at 1).
    init(transport: Transport, reservedID portID: UInt64) throws(PortError) {
        let process = ProcessIdentity.current
        let route = try PortRoute.local(transport, portID: portID, process: process)
        address = PortAddress(pid: process.pid, startTime: process.startTime, portID: portID, route: route)
        distance = .process
        descriptorBytes = WireFormat.encodeDescriptor(address)
        relativeDescriptor = TCPTransport.relativeDescriptor(of: address)
        receiver = try PortReceiver(address: address)
        PortRegistry.shared.addLocal(self)
        receiver?.drops.owned(by: self)
        _ = PortTap.configuredFromEnvironment
        Self.liveCount.wrappingAdd(1, ordering: .relaxed)
        sideTableAnchor.hold(self)
    }

    /// A send right to the port at `address` (in another process, or a port of
    /// this process that no longer exists, made invalid).
    init(sendRightTo address: PortAddress, invalidBecause reason: PortError? = nil) {
        self.address = address
        distance = address.distance
        descriptorBytes = WireFormat.encodeDescriptor(address)
        relativeDescriptor = nil
        receiver = nil
        // A process that only sends (it looks a port up and never makes one
        // of its own) is tapped too (S-TAP-1).
        _ = PortTap.configuredFromEnvironment
        if let reason {
            valid.store(false, ordering: .relaxed)
            state.withLock { $0.lifecycle = .invalidated(reason) }
        }
        Self.liveCount.wrappingAdd(1, ordering: .relaxed)
        sideTableAnchor.hold(self)
    }

    deinit {
        Self.liveCount.wrappingSubtract(1, ordering: .relaxed)
        let bits = channelBits.load(ordering: .acquiring)
        // U-SEND-CHANNEL (docs/unsafe-sites.md).
        if bits != 0 { Unmanaged<SendChannel>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).release() }
        // A local port nobody references any more cannot be sent to: close it.
        if let receiver {
            let (source, names) = state.withLock { ($0.source, $0.registeredNames) }
            source?.invalidate()
            receiver.close()
            PortRegistry.shared.removeLocal(address)
            for name in names { PortNameServer.release(name) }
        }
    }

    // MARK: - What a port is

    /// True for a port made here, which receives; false for a send right.
    public var isLocal: Bool { receiver != nil }

    /// `.ipc` if other processes of this host can reach the port, `.tcp`
    /// with the endpoint its process listens at (or `.connectingOnly`) if
    /// other hosts can.
    public var transport: Transport { address.route.transport }

    /// False once invalidated, or once the process that owns it has exited.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// The pid of the process that owns the port.
    public var ownerProcessID: Int32 { address.pid }

    /// Messages this local port has dropped: malformed ones (S-PORT-7), and
    /// ones that arrived while it had no message handler. `dropCounts` has
    /// them per reason.
    public var droppedMessageCount: UInt64 { receiver?.droppedCount ?? 0 }

    /// The messages this local port has dropped, per reason (S-PORT-7): no
    /// handler, unsupported version, oversized, and each kind of malformed
    /// input. Empty for a send right.
    public var dropCounts: PortDropCounts {
        receiver?.drops.counts ?? PortDropCounts([UInt64](repeating: 0, count: PortDropReason.allCases.count))
    }

    /// `Port(<pid>/<port id> (inproc|ipc path))`, as logs and errors show it.
    public var description: String { "Port(\(address))" }

    /// The name the port is registered or was looked up under, if any: how
    /// the tap, metrics and traces name it.
    package var knownName: String? {
        state.withLock { $0.registeredNames.first ?? $0.lookedUpName }
    }

    /// Two ports are equal when they name the same port: a send right equals the port it sends to.
    public static func == (lhs: Port, rhs: Port) -> Bool { lhs.address == rhs.address }
    /// Hashes the port's address, consistently with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(address) }

    // MARK: - Receiving

    /// Sets what runs, on the port's loop thread, for each message (NSPort's
    /// delegate). Set it before scheduling: a message that arrives while
    /// there is none is dropped and logged.
    ///
    /// The port holds the handler until `invalidate()` (or its deinit). A
    /// handler that keeps messages, or captures the port, keeps the port
    /// alive (a received message holds its `receivePort`): invalidate such
    /// a port when done with it, which releases the handler. An invalid
    /// port keeps no handler.
    public func setMessageHandler(_ handler: (@Sendable (PortMessage) -> Void)?) {
        setHandler(handler.map { .message($0) })
    }

    /// Sets what runs, on the port's loop thread, for each message, read in
    /// place: the handler gets a ``PortMessageView`` of the message where it
    /// arrived, with no `Data` made for its data components (for streams of
    /// many messages; see ``PortMessageView``). It replaces a handler set
    /// with ``setMessageHandler(_:)``, and the other way round: a port has
    /// one handler. Everything else is as for ``setMessageHandler(_:)``
    /// (batches, S-SRC1-1; drops while there is none).
    public func setInPlaceMessageHandler(_ handler: (@Sendable (borrowing PortMessageView) -> Void)?) {
        setHandler(handler.map { .inPlace($0) })
    }

    /// Replaces the handler. An invalid port keeps none: it delivers nothing
    /// more, and what a handler holds (often the port itself, through the
    /// messages it keeps: a received message holds its `receivePort`) would
    /// otherwise keep the port alive for good. The handler replaced is
    /// released after the lock: its captures' deinits are user code.
    func setHandler(_ handler: MessageHandler?) {
        let replaced: MessageHandler? = handlerLock.withLock {
            defer { handlerVersion.wrappingAdd(1, ordering: .releasing) }
            let old = self.handler
            self.handler = isValid ? handler : nil
            return old
        }
        _ = replaced  // released here, outside the lock
    }

    /// Sets `handler` and returns its version: `clearHandler(ifStill:)`
    /// then clears it only if no other was set since (a message stream's).
    func installHandler(_ handler: MessageHandler) -> UInt64 {
        handlerLock.withLock {
            self.handler = isValid ? handler : nil
            return handlerVersion.wrappingAdd(1, ordering: .releasing).newValue
        }
    }

    /// Clears the handler if it is still the one `installHandler` set as `version`.
    func clearHandler(ifStill version: UInt64) {
        let replaced: MessageHandler? = handlerLock.withLock {
            guard handlerVersion.load(ordering: .relaxed) == version else { return nil }
            defer { handlerVersion.wrappingAdd(1, ordering: .releasing) }
            let old = self.handler
            self.handler = nil
            return old
        }
        _ = replaced  // released here, outside the lock
    }

    /// Puts messages taken in but never handed out back at the head of the
    /// port's queue (`PortReceiver.requeue`, S-ASYNC-2).
    func requeue(_ messages: [PortMessage]) { receiver?.requeue(messages) }

    /// Receives on `loop` while it runs `mode` (`.common` accepted). A local
    /// port is scheduled on one loop, in any number of its modes.
    /// - Throws: `.notLocal` for a send right, `.invalidPort`,
    ///   `.scheduledOnAnotherLoop`, or `.runLoop` if the loop refuses.
    public func schedule(in loop: RunLoop, forMode mode: RunLoop.Mode) throws(PortError) {
        guard let receiver else { throw .notLocal(description) }
        guard isValid else { throw invalidError() }
        let source: SocketSource = state.withLock { state in
            if let existing = state.source { return existing }
            let made = SocketSource(
                socket: receiver.socket,
                pollDescriptor: receiver.pollDescriptor,
                // The receiver, not the port: the source must not keep its
                // port alive, and a weak reference costs on every message.
                hasInput: { receiver.hasInput() },
                handler: { [port = WeakCapture(self)] _, batch in port.object?.deliver(batch) ?? .init(handled: false, drained: false) }
            )
            state.source = made
            return made
        }
        // Check and claim in one step: two threads scheduling on two loops at
        // once must not both pass a check and then trap in RunLoop.add.
        guard source.binding.bind(to: loop) else { throw .scheduledOnAnotherLoop(description) }
        do { try loop.add(source, forMode: mode) } catch { throw .runLoop(error) }
        // A tcp port's loop reads the tcp sockets itself in this mode.
        if address.reach == .network { NetworkHub.shared.portScheduled(on: loop, forMode: mode) }
    }

    /// Receives on `thread`'s loop in the common modes (where a LoopThread's
    /// tasks run too). Any thread.
    /// - Throws: `.runLoop(.notStarted)` before the thread's `start()`,
    ///   `.runLoop(.loopGone)` after its `stop()`; otherwise what
    ///   `schedule(in:forMode:)` throws.
    public func schedule(on thread: LoopThread, forMode mode: RunLoop.Mode = .common) throws(PortError) {
        let loop: RunLoop
        do throws(RunLoopError) { loop = try thread.loopAcceptingWork() } catch { throw .runLoop(error) }
        try schedule(in: loop, forMode: mode)
    }

    /// Stops receiving on `loop` in `mode`; messages wait in the port.
    public func remove(from loop: RunLoop, forMode mode: RunLoop.Mode) {
        guard let source = state.withLock({ $0.source }) else { return }
        loop.remove(source, forMode: mode)
    }

    /// How many queued messages one callout of this port may deliver
    /// (S-SRC1-1, SwiftNIO's `maxMessagesPerRead`): fewer passes, so fewer
    /// observer calls and wake-up checks per message. A run with
    /// returnAfterSourceHandled still gets exactly one, and a stop ends the
    /// batch after the message being delivered. 1 gives CFRunLoop's order
    /// exactly (one message per pass). Values below 1 count as 1. Any
    /// thread; takes effect at the next callout.
    public var maxMessagesPerCallout: Int {
        get { batchLimit.load(ordering: .relaxed) }
        set { batchLimit.store(max(1, newValue), ordering: .relaxed) }
    }

    /// How long a send may wait for a connection to another process's port
    /// (one not made yet, a handshake that does not finish) before it fails
    /// as `.unreachable`, whatever its deadline (S-PORT-4); default 1 second,
    /// or the seconds in the environment variable
    /// `RUNLOOPKIT_CONNECTION_BOUND` when the process starts (for a whole
    /// deployment, or a run under a sanitizer that slows every handshake;
    /// a value that is not a number of seconds is logged and ignored).
    /// A peer that is connected but slow to read is back-pressure, which the
    /// send's own deadline bounds. Any thread; applies to later waits.
    public static var connectionBound: Duration {
        get { .nanoseconds(Int64(clamping: connectionBoundNanoseconds)) }
        set {
            let (seconds, attoseconds) = newValue.components
            let nanoseconds = max(0, seconds) &* 1_000_000_000 &+ max(0, attoseconds / 1_000_000_000)
            connectionBoundStorage.store(UInt64(nanoseconds), ordering: .relaxed)
        }
    }

    static var connectionBoundNanoseconds: UInt64 { connectionBoundStorage.load(ordering: .relaxed) }
    private static let connectionBoundStorage = Atomic<UInt64>(defaultConnectionBoundNanoseconds)

    /// 1 s, or `RUNLOOPKIT_CONNECTION_BOUND` seconds.
    static let defaultConnectionBoundNanoseconds: UInt64 = {
        let oneSecond: UInt64 = 1_000_000_000
        guard let text = getenv("RUNLOOPKIT_CONNECTION_BOUND").map({ String(cString: $0) }) else { return oneSecond }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds < 1e9 else {
            logger.warning("RUNLOOPKIT_CONNECTION_BOUND=\(text) is not a number of seconds; the connection bound stays 1 s")
            return oneSecond
        }
        return UInt64(seconds * 1e9)
    }()

    /// The default `maxMessagesPerCallout`, chosen by measurement
    /// (docs/performance.md, "The port path").
    public static let defaultMaxMessagesPerCallout = 32

    // Delivering (the batch on the loop thread): Port+Delivery.swift.
    // Sending (encode → send channel → socket): Port+Sending.swift.

    package func invalidError() -> PortError {
        state.withLock { state in
            if case let .invalidated(reason) = state.lifecycle { return reason }
            return .invalidPort(description)
        }
    }

    /// The name a send right was looked up under, if it has none yet (for the tap).
    func noteLookedUp(as name: String) {
        state.withLock { if $0.lookedUpName == nil { $0.lookedUpName = name } }
        tapNameChanged()
    }

    func didRegister(_ name: String) {
        state.withLock { $0.registeredNames.append(name) }
        tapNameChanged()
    }

    func didUnregister(_ name: String) {
        state.withLock { $0.registeredNames.removeAll { $0 == name } }
        tapNameChanged()
    }

    /// The tap announces the port's name again with its next event.
    private func tapNameChanged() { tapNameGeneration.wrappingAdd(1, ordering: .releasing) }

    // MARK: - Resolving descriptors

    /// The port a descriptor names: the local port itself when it is in this
    /// process (S-PORT-3: the same object comes back), else one shared send
    /// right per remote port, watched for its process's death.
    static func resolve(_ address: PortAddress) -> Port {
        PortRegistry.shared.resolve(address)
    }
}
