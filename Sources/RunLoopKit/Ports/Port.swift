import Glibc
import Logging
import Synchronization

/// A port: an NSMachPort-like endpoint for `PortMessage`s (S-PORT-1).
///
/// A *local* port receives: schedule it in one or more modes of one loop, and
/// its message handler runs on that loop's thread for each message, one per
/// pass (it is a Source1). Any thread may send to it; with `.ipc` transport,
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
    }

    let address: PortAddress
    /// The port's descriptor (docs/wire-format.md), made once: every message
    /// that carries this port as its reply port or a component sends it.
    let descriptorBytes: [UInt8]
    /// The receiving half; nil for a send right.
    let receiver: PortReceiver?
    /// Mirrors `state.lifecycle` for the message path, which reads it on
    /// every send without a lock; `state` holds the reason.
    let valid = Atomic<Bool>(true)
    /// `maxMessagesPerCallout`.
    private let batchLimit = Atomic<Int>(Port.defaultMaxMessagesPerCallout)

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
        var nextHandlerID: UInt64 = 0
        /// Names this port is registered under (S-PORT-6).
        var registeredNames: [String] = []
        /// The name a send right was looked up under.
        var lookedUpName: String?
    }

    /// Behind its own lock; the message path reads none of it.
    let state = Locked(State())
    /// The send channel, made on the first send and kept until deinit: the
    /// bits of a retained `Unmanaged<SendChannel>`, or 0. Read without a
    /// lock, because every send reads it, and a lock that the receiving
    /// thread takes too would bounce between the two threads on every message.
    private let channelBits = Atomic<UInt>(0)
    /// Guards `handler` alone, for the same reason: the loop thread reads it
    /// for every message, senders never.
    private let handlerLock = Lock()
    // Guarded by handlerLock.
    // @exclusivity(unchecked): read and written with `handlerLock` held only.
    @exclusivity(unchecked) private var handler: MessageHandler?
    /// Counts the changes of `handler` (written with `handlerLock` held): a
    /// batch reads the handler once and then, for each message, only this
    /// number, taking the lock again only when it moved.
    private let handlerVersion = Atomic<UInt64>(0)

    private static let nextPortID = Atomic<UInt64>(1)
    static let logger = Logger(label: "RunLoopKit.Port")

    /// Makes a local port, which can receive.
    /// - Parameter transport: `.inproc` (this process only) or `.ipc` (other
    ///   processes of this user too).
    /// - Throws: `PortError` if libzmq or the runtime directory refuses.
    public init(transport: Transport = .inproc) throws(PortError) {
        let portID = Self.nextPortID.wrappingAdd(1, ordering: .relaxed).oldValue
        let process = ProcessIdentity.current
        var ipcPath: String?
        var host: HostIdentity?
        if transport == .ipc {
            ipcPath = try RuntimeDirectory.path() + "/p\(process.pid)-\(portID).sock"
            host = HostIdentity.current
        }
        address = PortAddress(pid: process.pid, startTime: process.startTime, portID: portID, ipcPath: ipcPath, hostID: host)
        descriptorBytes = WireFormat.encodeDescriptor(address)
        receiver = try PortReceiver(address: address)
        PortRegistry.shared.addLocal(self)
        _ = PortTap.configuredFromEnvironment
    }

    /// A send right to the port at `address` (in another process, or a port of
    /// this process that no longer exists, made invalid).
    init(sendRightTo address: PortAddress, invalidBecause reason: PortError? = nil) {
        self.address = address
        descriptorBytes = WireFormat.encodeDescriptor(address)
        receiver = nil
        if let reason {
            valid.store(false, ordering: .relaxed)
            state.withLock { $0.lifecycle = .invalidated(reason) }
        }
    }

    deinit {
        let bits = channelBits.load(ordering: .acquiring)
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

    /// `.ipc` if other processes can reach the port.
    public var transport: Transport { address.ipcPath == nil ? .inproc : .ipc }

    /// False once invalidated, or once the process that owns it has exited.
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// The pid of the process that owns the port.
    public var ownerProcessID: Int32 { address.pid }

    /// Messages this local port has dropped: malformed ones (S-PORT-7), and
    /// ones that arrived while it had no message handler.
    public var droppedMessageCount: UInt64 { receiver?.droppedCount ?? 0 }

    /// `Port(<pid>/<port id> (inproc|ipc path))`, as logs and errors show it.
    public var description: String { "Port(\(address))" }

    /// How the tap and portsniff name the port: a name it is registered or
    /// was looked up under, else "<pid>/<port id>".
    var tapLabel: String {
        state.withLock { $0.registeredNames.first ?? $0.lookedUpName } ?? "\(address.pid)/\(address.portID)"
    }

    /// Two ports are equal when they name the same port: a send right equals the port it sends to.
    public static func == (lhs: Port, rhs: Port) -> Bool { lhs.address == rhs.address }
    /// Hashes the port's address, consistently with `==`.
    public func hash(into hasher: inout Hasher) { hasher.combine(address) }

    // MARK: - Receiving

    /// Sets what runs, on the port's loop thread, for each message (NSPort's
    /// delegate). Set it before scheduling: a message that arrives while
    /// there is none is dropped and logged.
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

    private func setHandler(_ handler: MessageHandler?) {
        handlerLock.withLock {
            self.handler = handler
            handlerVersion.wrappingAdd(1, ordering: .releasing)
        }
    }

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
                handler: { [weak self] _, batch in self?.deliver(batch) ?? false }
            )
            state.source = made
            return made
        }
        // Check and claim in one step: two threads scheduling on two loops at
        // once must not both pass a check and then trap in RunLoop.add.
        guard source.binding.bind(to: loop) else { throw .scheduledOnAnotherLoop(description) }
        do { try loop.add(source, forMode: mode) } catch { throw .runLoop(error) }
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
    /// as `.unreachable`, whatever its deadline (S-PORT-4); default 1 second.
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
    private static let connectionBoundStorage = Atomic<UInt64>(1_000_000_000)

    /// The default `maxMessagesPerCallout`, chosen by measurement
    /// (docs/performance.md, "Several messages per callout").
    public static let defaultMaxMessagesPerCallout = 32

    /// On the loop thread: one socket event, a batch of messages to the
    /// handler. Each malformed message dropped on the way counts as one.
    /// Returns true when the queue ran dry: that empty receive re-armed the
    /// socket's readiness signal, so the loop need not look again.
    private func deliver(_ batch: CalloutBatch) -> Bool {
        guard let receiver else { return false }
        var batch = BatchCount(limit: min(batch.limit, batchLimit.load(ordering: .relaxed)), callout: batch)
        while true {
            // The handler's kind says how a message is read; a handler set
            // since (perhaps by a handler) takes the very next message.
            let (handler, version) = currentHandler()
            let outcome = if case let .inPlace(body) = handler {
                deliverInPlace(&batch, from: receiver, to: body, version: version)
            } else {
                deliverMessages(&batch, from: receiver, to: handler?.messageBody, version: version)
            }
            switch outcome {
            case .ranDry: return true
            case .stopped: return false
            case .handlerChanged: continue
            }
        }
    }

    /// How a batch ended, or why it went back to read the handler again.
    private enum BatchOutcome { case ranDry, stopped, handlerChanged }

    /// The messages a batch has handled, against its limit (S-SRC1-1).
    private struct BatchCount {
        let limit: Int
        let callout: CalloutBatch
        var handled = 0

        /// After a message or a drop: may the batch go on?
        mutating func next() -> Bool {
            handled += 1
            return handled < limit && callout.mayContinue()
        }
    }

    /// Delivers `PortMessage`s while the handler stays `version`. One
    /// received message serves the whole run, decoded into message after
    /// message: its receivePort is set once, and what the last handler let
    /// go (the components array, the bytes of its data) is written over in
    /// place. A handler that keeps a message keeps a copy that stays as it
    /// was (copy on write). With no handler, messages are dropped and logged.
    private func deliverMessages(
        _ batch: inout BatchCount, from receiver: PortReceiver, to handler: (@Sendable (PortMessage) -> Void)?, version: UInt64
    ) -> BatchOutcome {
        var inbox = PortMessage(arrivingOn: self)
        while true {
            guard handlerVersion.load(ordering: .acquiring) == version else {
                receiver.endBatch(&inbox)
                return .handlerChanged
            }
            switch receiver.receive(into: &inbox) {
            case .empty:
                return .ranDry
            case .dropped:
                break
            case let .message(traceID):
                if PortTap.active.load(ordering: .relaxed) { PortTap.recordDelivery(inbox, on: self, traceID: traceID) }
                // Not `if let`: binding the argument copied the closure (a
                // retain and a release a message).
                if handler != nil { handler.unsafelyUnwrapped(inbox) } else { dropForNoHandler(inbox, receiver: receiver) }
            }
            guard batch.next() else {
                receiver.endBatch(&inbox)
                return .stopped
            }
        }
    }

    /// Delivers messages read in place (`PortMessageView`) while the handler
    /// stays `version`. Each message's frames are moved into this batch's
    /// holder, where they stay until the next message replaces them, so that
    /// closing the port from another thread, or a nested batch, cannot
    /// release them while a handler reads them.
    private func deliverInPlace(
        _ batch: inout BatchCount, from receiver: PortReceiver, to handler: @Sendable (borrowing PortMessageView) -> Void,
        version: UInt64
    ) -> BatchOutcome {
        let holder = receiver.takeHolder()
        defer { receiver.returnHolder(holder) }
        // The reply port of the last message: replaced only when a message
        // names another, so a stream from one sender retains nothing.
        var replyPort: Port?
        // The port components of the message being delivered (usually none).
        var ports: [Port] = []
        while true {
            guard handlerVersion.load(ordering: .acquiring) == version else { return .handlerChanged }
            let (received, header) = receiver.receiveInPlace(into: holder, replyPort: &replyPort, ports: &ports)
            switch received {
            case .empty:
                return .ranDry
            case .dropped:
                break
            case let .message(traceID):
                guard let header else { break }
                let view = PortMessageView(
                    arrivedOn: self, replyPort: replyPort,
                    message: InPlaceMessage(header: header, frames: holder, ports: header.hasPortComponent ? ports : nil))
                if PortTap.active.load(ordering: .relaxed) { PortTap.recordDelivery(view.makeMessage(), on: self, traceID: traceID) }
                handler(view)
            }
            guard batch.next() else { return .stopped }
        }
    }

    /// The message handler and its version, read under `handlerLock`
    /// without a generic closure: returning a closure through `withLock`
    /// re-abstracted it and allocated a thunk on every message.
    private func currentHandler() -> (MessageHandler?, UInt64) {
        handlerLock.lock()
        defer { handlerLock.unlock() }
        return (handler, handlerVersion.load(ordering: .relaxed))
    }

    /// A message that arrived with no handler set: counted and logged.
    private func dropForNoHandler(_ message: PortMessage, receiver: PortReceiver) {
        let count = receiver.countDrop()
        Self.logger.warning("port \(self): message \(message.msgid) arrived with no message handler set; dropped (#\(count))")
    }

    // MARK: - Sending

    /// Sends a message to this port (NSPort `sendBeforeDate:`), waiting for
    /// room until `deadline` if the port's queue is full (S-PORT-4).
    ///
    /// - Throws: `.invalidPort` / `.peerDied` if the port is invalid;
    ///   `.componentNotTransferable` if a port component or the reply port
    ///   cannot reach this port's process (an inproc port to another
    ///   process); `.messageTooLarge` past the wire format's limits;
    ///   `.timedOut` if there was no room by the deadline. Nothing is sent
    ///   when it throws.
    public func send(
        msgid: UInt32 = 0, components: [PortMessage.Component] = [], replyPort: Port? = nil, before deadline: Date
    ) throws(PortError) {
        try send(msgid: msgid, components: components, replyPort: replyPort, deadline: SendDeadline(deadline))
    }

    /// Sends `message`'s msgid, components and reply port to this port.
    public func send(_ message: PortMessage, before deadline: Date) throws(PortError) {
        try send(msgid: message.msgid, components: message.components, replyPort: message.replyPort,
                 deadline: SendDeadline(deadline))
    }

    /// Sends a message of one data component, `bytes`, given as they are:
    /// what `send(msgid:components:replyPort:before:)` sends for
    /// `[.data(Data(bytes))]`, byte for byte, without a `Data` made or read
    /// for it (for streams of many messages: docs/performance.md). The
    /// receiver cannot tell the two apart.
    ///
    /// - Throws: as `send(msgid:components:replyPort:before:)`.
    public func send(
        msgid: UInt32 = 0, bytes: UnsafeRawBufferPointer, replyPort: Port? = nil, before deadline: Date
    ) throws(PortError) {
        let deadline = SendDeadline(deadline)
        let (channel, traceID, sendTime) = try beginSend()
        do {
            let encoder = try MessageEncoder(
                msgid: msgid, dataCount: bytes.count, replyPort: replyPort, traceID: traceID,
                checkingPorts: { [unowned(unsafe) self] (port, role) throws(PortError) in try checkCanCarry(port, as: role) })
            if let size = encoder.packedSize {
                try channel.send(packedSize: size, deadline: deadline, destination: self) { encoder.writePacked(bytes: bytes, into: $0) }
            } else {
                // Over the pack limit: the multipart form, as for any large message.
                let components: [PortMessage.Component] = [.data(Data(bytes))]
                try encoder.withMultipartFrames(components) { (frames) throws(PortError) in
                    try channel.send(frames, deadline: deadline, destination: self)
                }
            }
        } catch {
            throw failedSend(error)
        }
        if let traceID {
            PortTap.recordSend(to: self, msgid: msgid, components: [.data(Data(bytes))], replyPort: replyPort, traceID: traceID, time: sendTime)
        }
    }

    /// The path of every send: Port → encode → send channel → socket.
    func send(msgid: UInt32, components: [PortMessage.Component], replyPort: Port?, deadline: SendDeadline) throws(PortError) {
        let (channel, traceID, sendTime) = try beginSend()
        do {
            // unowned(unsafe): the closure lives for the call, while `self`
            // is alive; a counted capture of a Port took Swift's slow
            // retain and release (its counts live in a side table) on every send.
            let encoder = try MessageEncoder(
                msgid: msgid, components: components, replyPort: replyPort, traceID: traceID,
                checkingPorts: { [unowned(unsafe) self] (port, role) throws(PortError) in try checkCanCarry(port, as: role) })
            if let size = encoder.packedSize {
                try channel.send(packedSize: size, deadline: deadline, destination: self) { encoder.writePacked(components, into: $0) }
            } else {
                try encoder.withMultipartFrames(components) { (frames) throws(PortError) in
                    try channel.send(frames, deadline: deadline, destination: self)
                }
            }
        } catch {
            throw failedSend(error)
        }
        if let traceID {
            PortTap.recordSend(to: self, msgid: msgid, components: components, replyPort: replyPort, traceID: traceID, time: sendTime)
        }
    }

    /// What every send does before encoding: the validity check, the send
    /// channel, and, when the tap is on, the trace id that pairs the send
    /// with its delivery and the time taken before sending (a delivery may
    /// be reported before the send returns). Plain calls rather than a
    /// helper taking the send as a closure: the closure's context cost a
    /// retain and a release a send.
    @inline(__always)
    private func beginSend() throws(PortError) -> (SendChannel, traceID: UInt64?, sendTime: Int64) {
        if !isValid { throw invalidError() }
        let traceID: UInt64? = PortTap.active.load(ordering: .relaxed) ? PortTap.makeTraceID() : nil
        return (sendChannel(), traceID, traceID == nil ? 0 : PortTap.now())
    }

    /// A send failed with `error`: when nothing can ever receive through
    /// this send right (S-PORT-8), it is invalid from now on and its
    /// handlers are told. Returns the error to throw.
    private func failedSend(_ error: PortError) -> PortError {
        switch error {
        case .unreachable, .peerDied: invalidate(because: error)
        default: break
        }
        return error
    }

    /// An inproc-only port cannot reach another process (S-PORT-2): say so
    /// at send time, not with a silent nil at the other end.
    private func checkCanCarry(_ port: Port, as role: String) throws(PortError) {
        guard port.isValid else { throw .componentNotTransferable("\(role) \(port) is invalid") }
        if !address.isInThisProcess && port.address.ipcPath == nil {
            throw .componentNotTransferable(
                "\(role) \(port) is inproc-only and this message goes to process \(address.pid); make it with Port(transport: .ipc)")
        }
    }

    private func sendChannel() -> SendChannel {
        let bits = channelBits.load(ordering: .acquiring)
        if bits != 0 { return Unmanaged<SendChannel>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!).takeUnretainedValue() }
        // First send (perhaps on two threads at once): the first channel stored wins.
        let made = Unmanaged.passRetained(SendChannel(address: address))
        let madeBits = UInt(bitPattern: made.toOpaque())
        let (stored, current) = channelBits.compareExchange(expected: 0, desired: madeBits, ordering: .acquiringAndReleasing)
        if stored { return made.takeUnretainedValue() }
        made.release()
        return Unmanaged<SendChannel>.fromOpaque(UnsafeRawPointer(bitPattern: current)!).takeUnretainedValue()
    }

    /// Whether a send waiting for room should give up: the port became
    /// invalid, or (for another process's port) its socket is gone.
    func destinationError() -> PortError? {
        if !isValid { return invalidError() }
        if !address.isInThisProcess, let path = address.ipcPath, access(path, F_OK) != 0 {
            let process = ProcessIdentity(pid: address.pid, startTime: address.startTime)
            invalidate(because: process.isAlive ? .invalidPort(description) : .peerDied(pid: address.pid, port: description))
            return invalidError()
        }
        return nil
    }

    func invalidError() -> PortError {
        state.withLock { state in
            if case let .invalidated(reason) = state.lifecycle { return reason }
            return .invalidPort(description)
        }
    }

    /// The name a send right was looked up under, if it has none yet (for the tap).
    func noteLookedUp(as name: String) {
        state.withLock { if $0.lookedUpName == nil { $0.lookedUpName = name } }
    }

    func didRegister(_ name: String) { state.withLock { $0.registeredNames.append(name) } }
    func didUnregister(_ name: String) { state.withLock { $0.registeredNames.removeAll { $0 == name } } }

    // MARK: - Resolving descriptors

    /// The port a descriptor names: the local port itself when it is in this
    /// process (S-PORT-3: the same object comes back), else one shared send
    /// right per remote port, watched for its process's death.
    static func resolve(_ address: PortAddress) -> Port {
        PortRegistry.shared.resolve(address)
    }
}
