import Synchronization
public import ZeroMQ

/// A port-based input source: CFRunLoopSource version 1 ("Source1"), on a
/// ZeroMQ socket or a plain file descriptor.
///
/// It wakes its loop by itself when its socket has a message (or its fd is
/// readable), and its handler runs on the loop's thread, one source event per
/// pass (S-SRC1-1). While the loop runs a mode the source is not in, messages
/// wait in the socket and are delivered in order when the loop next runs one
/// of the source's modes (S-SRC1-2). Ports are built on exactly this.
///
/// The handler is level-triggered: it is called while the socket has a
/// message, so it should receive at least one, without blocking
/// (`dontWait: true`); what it leaves is offered again on a later pass.
///
/// ```swift
/// let pull = try ZMQContext.shared.makeSocket(.pull)
/// try pull.bind("inproc://jobs")
/// let source = SocketSource(socket: pull) { _, socket in
///     while let frames = try? socket.receiveMultipart(dontWait: true) { handle(frames) }
/// }
/// try RunLoop.current.add(source, forMode: .default)
/// ```
///
/// Threading: add, remove and invalidate from any thread. A ZeroMQ socket is
/// not thread-safe: creating the source hands the socket to the loop's
/// thread, and from then on only the handler (or other code on that thread)
/// may use it. A source belongs to at most one loop.
public final class SocketSource: @unchecked Sendable {
    /// What the source listens to.
    public enum Endpoint: @unchecked Sendable {
        /// A ZeroMQ socket: the source wakes the loop through its ZMQ_FD.
        case socket(Socket)
        /// A plain file descriptor, reported while it is readable.
        case fileDescriptor(Int32)
    }

    /// The socket or file descriptor the source listens to.
    public let endpoint: Endpoint
    /// Kept for CFRunLoopSource parity; socket sources are served in arrival order, so that a busy one cannot starve the others (S-SRC1-1).
    public let order: Int
    /// Says whether it handled an event and whether the source found its
    /// queue empty (a port's batch that ran dry): then its readiness is
    /// re-armed, so it need not be looked at again until epoll reports it.
    private let handler: @Sendable (SocketSource, CalloutBatch) -> CalloutBatch.Outcome
    /// The socket's ZMQ_FD, read once in init; nil for a file descriptor source.
    private let socketDescriptor: Result<Int32, ZMQError>?
    /// Replaces the ZMQ_EVENTS check for a socket that its owner guards with
    /// a lock of its own (a port's receiver, which may be closed from any thread).
    private let inputCheck: (@Sendable () -> Bool)?
    @usableFromInline let valid = Atomic<Bool>(true)
    package let binding = LoopBinding()
    /// A helper of the library's own (the ports' network reader): it keeps
    /// no run going (S-RUN-1 counts only the user's sources) and its
    /// handler says itself whether it handled an event.
    let isAuxiliary: Bool
    /// An auxiliary source's descriptor is registered edge-triggered: its
    /// handler is called once per edge, and owes itself the rest.
    private let isEdgeTriggered: Bool

    /// The epoll token that identifies this source in its loop's wait sets.
    let token: UInt64 = SocketSource.nextToken.wrappingAdd(1, ordering: .relaxed).oldValue
    private static let nextToken = Atomic<UInt64>(3)  // 0 to 2: the loop's own fds (WaitSet)

    /// The `readyID` of the loop whose ready list holds this source, or 0:
    /// the loop asks this, not a set, on every socket event. Atomic because
    /// a source can move to another loop while its old loop still has a
    /// stale entry; each loop only sets its own id and clears its own id.
    let readyMark = Atomic<UInt64>(0)
    /// The stamp of the last mode snapshot that found this source among its
    /// sources (`ModeSnapshot.contains`): a hit answers without hashing.
    let memberStamp = Atomic<UInt64>(0)
    /// Set by its loop each time epoll reports its descriptor, for an owner
    /// that reads its socket only when something may be there: a port's
    /// receiver whose socket ran dry skips the read that would find it
    /// empty again after the messages a tcp reader handed it. (The ready
    /// list cannot say: a source already on it is not added again.) Atomic
    /// because the source may move to another loop; each loop touches it
    /// on its own thread.
    @usableFromInline let descriptorReported = Atomic<Bool>(false)

    /// A source on a ZeroMQ socket. The handler gets the source and the socket.
    public init(socket: Socket, order: Int = 0, handler: @escaping @Sendable (SocketSource, Socket) -> Void) {
        endpoint = .socket(socket)
        self.order = order
        self.handler = { source, _ in handler(source, socket); return .handlerRan }
        // Read ZMQ_FD now, on the socket's owner thread: `RunLoop.add` may run
        // on any thread, and reading it there would make that thread the
        // socket's owner, so the loop thread's first use would then fail the
        // ownership check.
        socketDescriptor = Result { () throws(ZMQError) -> Int32 in try socket.fileDescriptor }
        inputCheck = nil
        isAuxiliary = false
        isEdgeTriggered = true
        socket.releaseOwnership()
    }

    /// A source on a socket whose owner reads ZMQ_FD and ZMQ_EVENTS itself,
    /// under its own lock: the loop asks `hasInput` instead of the socket.
    /// `package`: a port's receiver is such an owner.
    package init(
        socket: Socket, pollDescriptor: Int32, hasInput: @escaping @Sendable () -> Bool,
        handler: @escaping @Sendable (SocketSource, CalloutBatch) -> CalloutBatch.Outcome
    ) {
        endpoint = .socket(socket)
        order = 0
        self.handler = handler
        socketDescriptor = .success(pollDescriptor)
        inputCheck = hasInput
        isAuxiliary = false
        isEdgeTriggered = true
    }

    /// An auxiliary source on a file descriptor (`isAuxiliary`), called
    /// while it is readable. `package`: a helper of the library's own.
    package init(auxiliaryOn fileDescriptor: Int32, handler: @escaping @Sendable () -> CalloutBatch.Outcome) {
        endpoint = .fileDescriptor(fileDescriptor)
        socketDescriptor = nil
        inputCheck = nil
        order = 0
        isAuxiliary = true
        isEdgeTriggered = false
        self.handler = { _, _ in handler() }
    }

    /// An auxiliary source on a file descriptor, called while it is
    /// readable, or with `edgeTriggered` once each time it becomes readable
    /// (an epoll set's descriptor: once each time a descriptor in it
    /// signals), with the pass's batch (its `limit` says whether the run
    /// returns after one source). `package`: the ports' network reader is one.
    package init(
        auxiliaryOn fileDescriptor: Int32, edgeTriggered: Bool,
        handler: @escaping @Sendable (CalloutBatch) -> CalloutBatch.Outcome
    ) {
        endpoint = .fileDescriptor(fileDescriptor)
        socketDescriptor = nil
        inputCheck = nil
        order = 0
        isAuxiliary = true
        isEdgeTriggered = edgeTriggered
        self.handler = { _, batch in handler(batch) }
    }

    /// A source on a file descriptor, called while it is readable. The source
    /// does not own the fd: close it yourself after removing the source.
    public init(fileDescriptor: Int32, order: Int = 0, handler: @escaping @Sendable (SocketSource, Int32) -> Void) {
        endpoint = .fileDescriptor(fileDescriptor)
        socketDescriptor = nil
        inputCheck = nil
        isAuxiliary = false
        isEdgeTriggered = false
        self.order = order
        self.handler = { source, _ in handler(source, fileDescriptor); return .handlerRan }
    }

    /// Whether epoll reported the descriptor since the last time this was
    /// asked; asking clears it. The loop's thread.
    @inlinable
    package func takeDescriptorReport() -> Bool {
        guard descriptorReported.load(ordering: .relaxed) else { return false }
        descriptorReported.store(false, ordering: .relaxed)
        return true
    }

    /// False after `invalidate()`, or once its loop's thread exited (S-THR-3). Any thread.
    @inlinable
    public var isValid: Bool { valid.load(ordering: .acquiring) }

    /// Removes the source from its loop; its handler is never called again.
    /// The socket is not closed. Idempotent.
    public func invalidate() {
        guard valid.exchange(false, ordering: .acquiringAndReleasing) else { return }
        binding.loop?.removeFromAllModes(self)
    }

    // MARK: - Used by RunLoop

    /// The fd to register for readiness: ZMQ_FD for a socket.
    func pollDescriptor() throws(RunLoopError) -> (fd: Int32, edgeTriggered: Bool) {
        switch endpoint {
        case .socket:
            switch socketDescriptor {
            case let .success(fd)?: return (fd, true)
            case let .failure(error)?: throw .zeroMQ(error)
            case nil: preconditionFailure("unreachable: a socket source reads ZMQ_FD in init")
            }
        case let .fileDescriptor(fd):
            return (fd, isEdgeTriggered)
        }
    }

    /// Whether a socket source could have lost its readiness edge to a send
    /// made outside its handler: true for every type that can send. The loop
    /// re-reads ZMQ_EVENTS of such sockets before it sleeps.
    var needsCheckBeforeSleeping: Bool {
        guard inputCheck == nil, case let .socket(socket) = endpoint else { return false }
        return socket.type != .pull && socket.type != .sub
    }

    /// On the loop thread: is there something to handle? A socket answers
    /// from ZMQ_EVENTS (which also resets its ZMQ_FD signal); an fd was
    /// reported readable by epoll, which is level-triggered for fds.
    func hasInput() -> Bool {
        if let inputCheck { return inputCheck() }
        switch endpoint {
        case let .socket(socket):
            guard let events = try? socket.events else { return false }
            return events.contains(.pollIn)
        case .fileDescriptor:
            return true
        }
    }

    /// Whether the loop should look again after handling: a socket may hold
    /// more messages; an fd is reported again by epoll if it is still readable.
    var isSocket: Bool {
        if case .socket = endpoint { return true }
        return false
    }

    /// One socket event: the handler, which a port uses to deliver up to
    /// `batch.limit` messages (S-SRC1-1).
    func handle(_ batch: CalloutBatch) -> CalloutBatch.Outcome { handler(self, batch) }

    func detach() {
        valid.store(false, ordering: .releasing)
        binding.clear()
    }
}

extension SocketSource: ListedModeItem {
    static var kindName: String { "SocketSource" }
    static var list: WritableKeyPath<ModeState, [SocketSource]> { \.socketSources }
    func bind(to loop: RunLoop) -> Bool { binding.bind(to: loop) }
    func unbind() { binding.clear() }

    /// Registers the fd in the mode's wait set (made with the mode's first
    /// socket source), so that the mode's sleep listens to it.
    func joinedLocked(_ mode: RunLoop.Mode, _ state: inout LoopState, waiter: LoopWaiter) throws(RunLoopError) {
        let descriptor = try pollDescriptor()
        try state.withMode(mode) { (items) throws(RunLoopError) in
            try waiter.register(descriptor.fd, token: token, edgeTriggered: descriptor.edgeTriggered, in: &items.waitSet)
        }
        state.registeredSockets[token] = self
        // Only a ZeroMQ socket may hold input that no edge will announce;
        // epoll reports a plain fd that is readable (level-triggered), and
        // one that is not must not reach the handler.
        if isSocket { state.socketsToCheck.append(self) }
    }

    func leftLocked(_ mode: RunLoop.Mode, _ state: inout LoopState) {
        guard let descriptor = try? pollDescriptor() else { return }
        LoopWaiter.unregister(descriptor.fd, from: state.modes.read(mode) { $0.waitSet } ?? nil)
    }

    func forgottenLocked(_ state: inout LoopState) {
        state.registeredSockets[token] = nil
    }

    func loopDidTearDown(_ loop: RunLoop, mode: RunLoop.Mode) { detach() }
}
