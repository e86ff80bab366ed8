internal import CLinuxSupport
import Glibc
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The sending half of every send right to one port in this process: a
/// ZeroMQ PUSH socket connected to the port's endpoint (inproc within the
/// process, ipc to another), shared by all threads under a lock.
///
/// libzmq sockets are not thread-safe (docs/design.md, "Ports and transports"); the lock gives the socket
/// one owner at a time, and serialising the senders keeps each sender's
/// messages in order (S-PORT-4). A send never drops: when the queue to the
/// port is full, the sender waits for room up to its deadline, then fails
/// with `PortError.timedOut` having sent nothing. Only the first frame can
/// meet a full queue: once libzmq accepts it, it takes the whole message.
///
/// Over tcp the channel has no socket of its own: it sends on the one
/// connection to the destination's process (`TCPConnection`), whose socket
/// lock does what the channel's does here; the channel's lock guards only
/// the first send, which makes the connection.
final class SendChannel: @unchecked Sendable {
    let address: PortAddress
    /// The route this process takes to the port (`PortRoute.sending(to:)`).
    let route: PortRoute
    let endpoint: String
    /// A tcp destination's instance and port id, which every message to it
    /// carries (S-NET-1); nil on inproc and ipc.
    let destination: WireFormat.Destination?
    /// The destination's tcp endpoint; nil on inproc and ipc.
    private let network: TCPTransport.Endpoint?
    /// `network != nil`, as one byte: what every send tests first
    /// (`Port.send`, which then takes `sendOverNetwork`).
    let isNetwork: Bool
    /// A channel of a port of this process (always inproc): the port's
    /// receiver, which its connect waits for (`InprocTransport.connect`).
    private let localReceiver: PortReceiver?
    // Internal (not private) only so that a test can see whether it is held
    // when invalidation handlers run (they must run with it released).
    let lock = Lock()
    // @exclusivity(unchecked) on the properties below: each is touched with
    // `lock` held only, so no two accesses overlap, and the dynamic check
    // would run at every access of every send.
    // Guarded by lock: made on first send, so a send right that never sends costs no socket.
    // U-SEND-CHANNEL-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var socket: Socket?
    // Guarded by lock: closed for the process's exit (see `OutboundFlush`).
    @exclusivity(unchecked) private var isClosedForExit = false
    // Guarded by lock: why nothing can be sent from here, once the first
    // send found out (S-PORT-8); then every send fails at once.
    @exclusivity(unchecked) private var unreachable: PortError?
    // Guarded by lock: when the socket was connected, and whether it has
    // taken a frame since: until it has, waiting for room is waiting for a
    // connection, which the connection bound limits (S-PORT-4).
    // U-SEND-CHANNEL-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var connectedAt: UInt64 = 0
    @exclusivity(unchecked) private var hasAccepted = false
    // Guarded by lock: a tcp channel's connection, taken on its first
    // send and kept: the send right is tied to it (S-NET-1).
    @exclusivity(unchecked) private var connection: TCPConnection?
    /// `connection`, uncounted, as the bits of an `Unmanaged`: stored once
    /// (releasing) when it is made, and what every later send loads instead
    /// of taking the lock. 0 until then.
    // U-SEND-CHANNEL-STATE (docs/unsafe-sites.md).
    private let connectionBits = Atomic<UInt>(0)
    // Taken from with `lock` held: the buffers packed messages are sent
    // in, used again when libzmq lets them go. Between threads a buffer
    // libzmq allocated per message is freed by the receiver, and past
    // glibc's fastbin limit (80-byte frames, so a 64-byte payload with its
    // framing) both threads then wait for the allocator's lock
    // (docs/performance.md, "The port path").
    // A channel to another process sends even its smallest frames from
    // the pool, so that at exit it knows how many messages libzmq has not
    // yet written (`unwritten()`).
    private let framePool: FramePool

    /// Messages queued towards one port before senders wait (ZMQ_SNDHWM;
    /// inproc adds the receiver's ZMQ_RCVHWM).
    static let highWaterMark: Int32 = 1000
    /// The largest packed message sent from the channel's pool (larger ones
    /// are allocated per message, as the transport allocates them anyway).
    static let pooledFrameBytes = 240
    /// The most pool buffers a channel makes: enough for a full queue
    /// (this side's and the receiver's high-water marks) and a batch.
    static let pooledFrames = Int(2 * highWaterMark) + 64
    /// How long a channel's socket lets libzmq deliver what it accepted
    /// when the channel goes during the process's life (its last send
    /// right released). At exit the exit bound decides instead
    /// (`closeForExit`).
    static let lingerMilliseconds: Int32 = 2000
    /// While waiting for room, how often a sender checks that the port is
    /// still valid, so that a dead peer fails a waiting send promptly.
    static let validityCheckMilliseconds: Int32 = 50

    init(address: PortAddress, localReceiver: PortReceiver? = nil) {
        self.address = address
        self.localReceiver = localReceiver
        route = PortRoute.sending(to: address)
        endpoint = route.sendEndpoint(for: address)
        if case let .tcp(network) = route {
            self.network = network
            destination = WireFormat.Destination(instance: network.instance, portID: address.portID)
        } else {
            network = nil
            destination = nil
        }
        isNetwork = network != nil
        framePool = FramePool(
            bufferBytes: Self.pooledFrameBytes, maxBuffers: Self.pooledFrames,
            smallestFrameBytes: route.flushesAtExit ? 1 : FramePool.inlineFrameBytes + 1)
        if route.flushesAtExit { OutboundFlush.shared.track(self) }
    }

    /// At process exit: what the channel still holds; nil when a sender
    /// holds the lock.
    func unwritten() -> Unwritten? {
        guard lock.tryLock() else { return nil }
        defer { lock.unlock() }
        guard socket != nil else { return Unwritten(messages: 0, isCounted: true, hasAccepted: false) }
        return Unwritten(
            messages: framePool.outstandingBuffers(), isCounted: framePool.lastFrameWasPooled, hasAccepted: hasAccepted)
    }

    /// At process exit (`OutboundFlush`): closes the socket, letting libzmq
    /// write what it accepted for `lingerMilliseconds` more at most; later
    /// sends fail. Waits for a send in progress until `deadline`; returns
    /// false if one still held the channel then (its socket stays open).
    func closeForExit(lingerMilliseconds: Int32, waitingUntil deadline: UInt64) -> Bool {
        guard lock.tryLock() || lock.lock(until: deadline) else { return false }
        isClosedForExit = true
        try? socket?.setLinger(milliseconds: lingerMilliseconds)
        socket?.close()
        socket = nil
        lock.unlock()
        return true
    }

    deinit {
        socket?.close()
    }

    /// Sends one message packed into a frame of `packedSize` bytes, which
    /// `write` fills where libzmq sends it from (called again after a wait
    /// for room); while it waits, `destination` says whether the port has
    /// become unusable (`Port.destinationError`).
    func send(
        packedSize: Int, deadline: SendDeadline, destination: Port, write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(PortError) {
        try withSocket(deadline: deadline) { (socket) throws(PortError) in
            var waitUntil: UInt64?  // read the first time there is no room
            do {
                while try !socket.send(byteCount: packedSize, from: framePool, dontWait: true, write: write) {
                    try waitForRoom(socket, until: &waitUntil, deadline: deadline, destination: destination)
                }
            } catch {
                throw portError(error)
            }
            hasAccepted = true
        }
    }

    /// Sends a large message as its frames (`MessageEncoder.withMultipartFrames`).
    func send(_ frames: OutgoingFrames, deadline: SendDeadline, destination: Port) throws(PortError) {
        try withSocket(deadline: deadline) { (socket) throws(PortError) in
            var waitUntil: UInt64?
            try sendMultipart(frames, on: socket, until: &waitUntil, deadline: deadline, destination: destination)
        }
    }

    /// Runs `body` with the connected socket, the lock held: what every
    /// send does first. Fails at once once the port is known unreachable.
    @inline(__always)
    private func withSocket(deadline: SendDeadline, _ body: (Socket) throws(PortError) -> Void) throws(PortError) {
        // The deadline is read from the clock only if the send must wait.
        guard lock.tryLock() || lock.lock(until: deadline.instant()) else {
            throw .timedOut(TimeoutError(operation: "send to port \(address): waiting for another sender to this port"))
        }
        defer {
            socket?.releaseOwnership()
            lock.unlock()
        }
        if let unreachable { throw unreachable }
        // Uncounted: the socket stays while the lock is held (only
        // `closeForExit`, which takes the lock, lets it go), so a send
        // needs no retain and release of it.
        try connectedSocket().withGuaranteedReference(body)
    }

    /// A packed message over tcp without a trace context: as version 5 by
    /// `writeCompact` (which returns its size) to a peer that reads it, when
    /// small (`WireFormat.compactLimit`); else by `write` as version 2 after
    /// room for the extension area, made version 3 naming the destination
    /// (`WireFormat.extendPacked`). inproc and ipc sends pay nothing for tcp.
    @inline(never)
    func sendOverNetwork(
        packedSize: Int, deadline: SendDeadline, write: (UnsafeMutableRawBufferPointer) -> Void,
        writeCompact: (UnsafeMutableRawBufferPointer, WireFormat.Destination) -> Int
    ) throws(PortError) {
        let destination = destination.unsafelyUnwrapped
        // Read for the address only if the send fails (a closure over `self`
        // retained it every send). U-SEND-CHANNEL (docs/unsafe-sites.md).
        unowned(unsafe) let channel = self
        try withConnection(deadline: deadline) { (connection) throws(PortError) in
            if packedSize <= WireFormat.compactLimit && connection.readsCompactMessages {
                return try connection.send(upTo: WireFormat.compactCapacity(packedSize: packedSize), deadline: deadline, port: channel.address) {
                    writeCompact($0, destination)
                }
            }
            // Version 3 (over the compact limit, or a peer that reads no version 5): the destination alone in its area.
            let gap = WireFormat.destinationAreaSize
            try connection.send(packedSize: packedSize + gap, deadline: deadline, port: channel.address) { buffer in
                write(UnsafeMutableRawBufferPointer(rebasing: buffer[gap...]))
                WireFormat.extendPacked(buffer, destination: destination)
            }
        }
    }

    /// A packed message over tcp that carries `trace`: always version 3
    /// (docs/wire-format.md, "Trace context"), written by `write` as version
    /// 2 after room for the extension area, then made version 3.
    @inline(never)
    func sendOverNetwork(
        packedSize: Int, trace: PortTraceContext, deadline: SendDeadline, write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(PortError) {
        let fields = WireFormat.ExtensionFields(destination: destination.unsafelyUnwrapped, trace: trace)
        let gap = fields.areaSize
        try withConnection(deadline: deadline) { (connection) throws(PortError) in
            try connection.send(packedSize: packedSize + gap, deadline: deadline, port: address) { buffer in
                write(UnsafeMutableRawBufferPointer(rebasing: buffer[gap...]))
                WireFormat.extendPacked(buffer, with: fields)
            }
        }
    }

    /// A large message over tcp: its header frame made version 3.
    @inline(never)
    func sendOverNetwork(_ frames: OutgoingFrames, trace: PortTraceContext?, deadline: SendDeadline) throws(PortError) {
        let fields = WireFormat.ExtensionFields(destination: destination!, trace: trace)
        let header = WireFormat.extendedMultipartHeader(frames.header, with: fields)
        // withUnsafeBytes rethrows untyped errors: the typed one travels in a Result.
        let outcome: Result<Void, PortError> = header.withUnsafeBytes { bytes in
            let extended = OutgoingFrames(
                header: bytes, components: frames.components, replyDescriptor: frames.replyDescriptor, relativeLimit: frames.relativeLimit)
            return Result { () throws(PortError) in
                try withConnection(deadline: deadline) { (connection) throws(PortError) in
                    try connection.send(extended, deadline: deadline, port: address)
                }
            }
        }
        try outcome.get()
    }

    /// A packed message with a trace context over inproc or ipc: version 3
    /// with the context in its extension area, written as the tcp path
    /// writes it; other sends stay version 2.
    @inline(never)
    func send(
        packedSize: Int, trace: PortTraceContext, deadline: SendDeadline, destination: Port,
        write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(PortError) {
        let fields = WireFormat.ExtensionFields(destination: nil, trace: trace)
        let gap = fields.areaSize
        try send(packedSize: packedSize + gap, deadline: deadline, destination: destination) { buffer in
            write(UnsafeMutableRawBufferPointer(rebasing: buffer[gap...]))
            WireFormat.extendPacked(buffer, with: fields)
        }
    }

    /// A large message with a trace context over inproc or ipc: its header
    /// frame made version 3.
    @inline(never)
    func send(_ frames: OutgoingFrames, trace: PortTraceContext, deadline: SendDeadline, destination: Port) throws(PortError) {
        let header = WireFormat.extendedMultipartHeader(frames.header, with: WireFormat.ExtensionFields(destination: nil, trace: trace))
        let outcome: Result<Void, PortError> = header.withUnsafeBytes { bytes in
            let extended = OutgoingFrames(
                header: bytes, components: frames.components, replyDescriptor: frames.replyDescriptor, relativeLimit: frames.relativeLimit)
            return Result { () throws(PortError) in try send(extended, deadline: deadline, destination: destination) }
        }
        try outcome.get()
    }

    /// Runs `body` with the tcp connection to the destination's process:
    /// taken on the first send, after the reachability check (S-PORT-8),
    /// and kept; once it broke, its own send fails at once. Later sends
    /// take no channel lock: the connection stays for the channel's life,
    /// and its socket lock orders each sender's messages (S-PORT-4).
    @inline(__always)
    private func withConnection(deadline: SendDeadline, _ body: (TCPConnection) throws(PortError) -> Void) throws(PortError) {
        let bits = connectionBits.load(ordering: .acquiring)
        guard bits != 0 else { return try withNewConnection(deadline: deadline, body) }
        // Uncounted: `connection` holds it for the channel's life.
        // U-SEND-CHANNEL-STATE (docs/unsafe-sites.md).
        try Unmanaged<TCPConnection>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped).withGuaranteedReference(body)
    }

    /// Which of this process's ports a message over the channel's tcp
    /// connection may carry as version-4 descriptors
    /// (`TCPConnection.relativeLimit`): none (0) over inproc and ipc, and
    /// before the channel's first send made its connection.
    @inline(__always)
    var relativeLimit: UInt16 {
        guard isNetwork else { return 0 }
        let bits = connectionBits.load(ordering: .acquiring)
        guard bits != 0 else { return firstRelativeLimit() }
        // Uncounted: `connection` holds it for the channel's life.
        // U-SEND-CHANNEL-STATE (docs/unsafe-sites.md).
        return Unmanaged<TCPConnection>.fromOpaque(UnsafeRawPointer(bitPattern: bits).unsafelyUnwrapped)
            .withGuaranteedReference { $0.relativeLimit.load(ordering: .acquiring) }
    }

    /// Before the channel's first send: the live connection to the port's
    /// process, which that send will take, says (a reply's channel is
    /// new, and its connection is the one the request came over).
    @inline(never)
    private func firstRelativeLimit() -> UInt16 {
        guard let instance = network?.instance else { return 0 }
        return NetworkHub.shared.liveConnection(to: instance)?.relativeLimit.load(ordering: .acquiring) ?? 0
    }

    /// The first send over tcp (or one racing it, or one after the port
    /// was found unreachable), under the channel's lock.
    @inline(never)
    private func withNewConnection(deadline: SendDeadline, _ body: (TCPConnection) throws(PortError) -> Void) throws(PortError) {
        guard lock.tryLock() || lock.lock(until: deadline.instant()) else {
            throw .timedOut(TimeoutError(operation: "send to port \(address): waiting for another sender to this port"))
        }
        defer { lock.unlock() }
        if let unreachable { throw unreachable }
        if isClosedForExit { throw .invalidPort("\(address): this process is exiting") }
        if let connection { return try body(connection) }
        if let problem = route.reachabilityProblem(address) {
            unreachable = problem
            throw problem
        }
        let made = try NetworkHub.shared.connection(for: network!, port: address.description)
        connection = made
        // U-SEND-CHANNEL-STATE (docs/unsafe-sites.md).
        connectionBits.store(UInt(bitPattern: Unmanaged.passUnretained(made).toOpaque()), ordering: .releasing)
        try body(made)
        hasAccepted = true
    }

    /// A large message's frames. The first frame decides: accepted, or no
    /// room yet; once libzmq accepts it, it takes the whole message.
    private func sendMultipart(
        _ frames: OutgoingFrames, on socket: Socket, until waitUntil: inout UInt64?, deadline: SendDeadline, destination: Port
    ) throws(PortError) {
        do {
            while try !frames.send(0, on: socket) {
                try waitForRoom(socket, until: &waitUntil, deadline: deadline, destination: destination)
            }
            hasAccepted = true
            for index in 1..<frames.count where try !frames.send(index, on: socket) {
                // libzmq refuses a later frame only when the peer's
                // connection broke mid-message; it discards the part sent.
                throw PortError.peerDied(pid: address.pid, port: address.description)
            }
        } catch {
            throw portError(error)
        }
    }

    /// What a send throws for `error`, met on the way.
    private func portError(_ error: any Error) -> PortError {
        switch error {
        case let error as PortError: error
        case let error as ZMQError: .zeroMQ(error)
        default: .invalidPort("\(address): \(error)")
        }
    }

    /// No room for the next message yet: fails if the destination became
    /// unusable, else waits (see below) until the deadline, read from the
    /// clock the first time only.
    private func waitForRoom(
        _ socket: Socket, until waitUntil: inout UInt64?, deadline: SendDeadline, destination: Port
    ) throws(PortError) {
        if let error = destination.destinationError() { throw error }
        let until = waitUntil ?? deadline.instant()
        waitUntil = until
        try waitForRoom(socket, deadline: until)
    }

    /// Blocks until the socket can take a message or the deadline passes,
    /// never longer than `validityCheckMilliseconds` at a time.
    private func waitForRoom(_ socket: Socket, deadline: UInt64) throws(PortError) {
        let now = MonotonicClock.now()
        if !hasAccepted && now - connectedAt >= Port.connectionBoundNanoseconds {
            // Never connected: no handshake within the bound, whatever the
            // deadline (S-PORT-4): unreachable, not slow.
            let bound = Duration.nanoseconds(Int64(clamping: Port.connectionBoundNanoseconds))
            unreachable = .unreachable(address.description, reason: "no connection within the connection bound (\(bound))")
            throw unreachable!
        }
        guard now < deadline else { throw .timedOut(TimeoutError(operation: "send to port \(address): its queue stayed full")) }
        do {
            // ZMQ_FD signals that ZMQ_EVENTS may have changed; read the
            // events first, since reading them is what re-arms the signal.
            if try socket.events.contains(.pollOut) { return }
            var descriptor = pollfd(fd: try socket.fileDescriptor, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(min((deadline - now) / 1_000_000 + 1, UInt64(Self.validityCheckMilliseconds)))
            _ = poll(&descriptor, 1, remaining)
        } catch {
            throw .zeroMQ(error)
        }
    }

    /// The socket, connected on first use; `socket` holds it. Lock held.
    // U-SEND-CHANNEL-STATE (docs/unsafe-sites.md).
    private func connectedSocket() throws(PortError) -> Unmanaged<Socket> {
        if socket != nil { return Unmanaged.passUnretained(socket.unsafelyUnwrapped) }
        if isClosedForExit { throw .invalidPort("\(address): this process is exiting") }
        if let unreachable { throw unreachable }
        // Decided on first use (S-PORT-8): before libzmq, which would
        // connect in the background and wait quietly for a peer that never comes.
        if let problem = route.reachabilityProblem(address) {
            unreachable = problem
            throw problem
        }
        let made: Socket
        let connected: Bool
        do {
            made = try route.sendContext.makeSocket(.push)
            try made.setSendHighWaterMark(Self.highWaterMark)
            try made.setLinger(milliseconds: Self.lingerMilliseconds)
            // Queue only towards a connected peer: a message never waits in
            // a pipe to a port that is not there (it waits for room instead).
            try made.setImmediate(true)
            connected = try InprocTransport.connect(made, to: endpoint, receiver: localReceiver)
        } catch {
            throw .zeroMQ(error)
        }
        guard connected else {
            made.close()
            throw .invalidPort("Port(\(address))")
        }
        socket = made
        connectedAt = MonotonicClock.now()
        // U-SEND-CHANNEL-STATE (docs/unsafe-sites.md).
        return Unmanaged.passUnretained(made)
    }
}
