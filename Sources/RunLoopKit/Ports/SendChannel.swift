internal import CLinuxSupport
import Glibc
import ZeroMQ

/// The sending half of every send right to one port in this process: a
/// ZeroMQ PUSH socket connected to the port's endpoint (inproc within the
/// process, ipc to another), shared by all threads under a lock.
///
/// libzmq sockets are not thread-safe (DESIGN.md); the lock gives the socket
/// one owner at a time, and serialising the senders keeps each sender's
/// messages in order (S-PORT-4). A send never drops: when the queue to the
/// port is full, the sender waits for room up to its deadline, then fails
/// with `PortError.timedOut` having sent nothing. Only the first frame can
/// meet a full queue: once libzmq accepts it, it takes the whole message.
final class SendChannel: @unchecked Sendable {
    let address: PortAddress
    let endpoint: String
    private let lock = Lock()
    // Guarded by lock: made on first send, so a send right that never sends costs no socket.
    private var socket: Socket?
    // Guarded by lock: closed for the process's exit (see `OutboundFlush`).
    private var isClosedForExit = false

    /// Messages queued towards one port before senders wait (ZMQ_SNDHWM;
    /// inproc adds the receiver's ZMQ_RCVHWM).
    static let highWaterMark: Int32 = 1000
    /// How long a closing channel lets libzmq deliver what it accepted.
    static let lingerMilliseconds: Int32 = 2000
    /// While waiting for room, how often a sender checks that the port is
    /// still valid, so that a dead peer fails a waiting send promptly.
    static let validityCheckMilliseconds: Int32 = 50

    init(address: PortAddress) {
        self.address = address
        endpoint = address.isInThisProcess ? address.inprocEndpoint : (address.ipcEndpoint ?? address.inprocEndpoint)
        if !address.isInThisProcess { OutboundFlush.shared.track(self) }
    }

    /// At process exit: closes the socket so that libzmq flushes what it
    /// accepted (see `OutboundFlush`); later sends fail. Waits a moment at
    /// most for a send in progress.
    func closeForExit() {
        guard lock.lock(until: MonotonicClock.instant(secondsFromNow: 0.1)) else { return }
        isClosedForExit = true
        socket?.close()
        socket = nil
        lock.unlock()
    }

    deinit {
        socket?.close()
    }

    /// Sends one encoded message; `destinationError` says whether the port
    /// has become unusable while the send waits for room.
    func send(_ frames: OutgoingFrames, deadline: UInt64, destinationError: () -> PortError?) throws(PortError) {
        guard lock.lock(until: deadline) else { throw .timedOut(TimeoutError(operation: "send to port \(address): waiting for another sender to this port")) }
        defer {
            socket?.releaseOwnership()
            lock.unlock()
        }
        let socket = try connectedSocket()
        do {
            // The first frame decides: accepted, or no room yet.
            var portsSent = 0
            while try !frames.send(0, on: socket, portsSent: &portsSent) {
                if let error = destinationError() { throw error }
                try waitForRoom(socket, deadline: deadline)
            }
            for index in 1..<frames.count where try !frames.send(index, on: socket, portsSent: &portsSent) {
                // libzmq refuses a later frame only when the peer's
                // connection broke mid-message; it discards the part sent.
                throw PortError.peerDied(pid: address.pid, port: address.description)
            }
        } catch let error as PortError {
            throw error
        } catch let error as ZMQError {
            throw .zeroMQ(error)
        } catch {
            throw .invalidPort("\(address): \(error)")
        }
    }

    /// Blocks until the socket can take a message or the deadline passes,
    /// never longer than `validityCheckMilliseconds` at a time.
    private func waitForRoom(_ socket: Socket, deadline: UInt64) throws(PortError) {
        let now = MonotonicClock.now()
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

    private func connectedSocket() throws(PortError) -> Socket {
        if let socket { return socket }
        if isClosedForExit { throw .invalidPort("\(address): this process is exiting") }
        do {
            // inproc needs the receiver's context; ipc channels use their own,
            // so that it can be flushed and terminated at exit.
            let context = address.isInThisProcess ? ZMQContext.shared : OutboundFlush.shared.context
            let made = try context.makeSocket(.push)
            try made.setSendHighWaterMark(Self.highWaterMark)
            try made.setLinger(milliseconds: Self.lingerMilliseconds)
            // Queue only towards a connected peer: a message never waits in
            // a pipe to a port that is not there (it waits for room instead).
            try made.setImmediate(true)
            try made.connect(endpoint)
            socket = made
            return made
        } catch {
            throw .zeroMQ(error)
        }
    }
}

/// The frames of one PortMessage on its way out (docs/wire-format.md): the
/// header, one frame per component, and the reply port's descriptor; or, in
/// the packed form, one frame holding all of it.
struct OutgoingFrames {
    let header: UnsafeRawBufferPointer
    let components: [PortMessage.Component]
    /// The descriptors of the port components, in component order.
    let portDescriptors: [[UInt8]]
    let replyDescriptor: [UInt8]?

    init(header: UnsafeRawBufferPointer, components: [PortMessage.Component], portDescriptors: [[UInt8]], replyDescriptor: [UInt8]?) {
        self.header = header
        self.components = components
        self.portDescriptors = portDescriptors
        self.replyDescriptor = replyDescriptor
    }

    /// A packed message: a single frame.
    init(packed frame: UnsafeRawBufferPointer) {
        self.init(header: frame, components: [], portDescriptors: [], replyDescriptor: nil)
    }

    var count: Int { 1 + components.count + (replyDescriptor == nil ? 0 : 1) }

    /// Sends frame `index` without blocking; false if there was no room.
    /// `portsSent` counts the port components already sent, which says
    /// which descriptor a port component's frame carries.
    func send(_ index: Int, on socket: Socket, portsSent: inout Int) throws -> Bool {
        let more = index < count - 1
        if index == 0 { return try socket.send(header, more: more, dontWait: true) }
        if index <= components.count {
            switch components[index - 1] {
            case let .data(data):
                return try socket.send(data, more: more, dontWait: true)
            case .port:
                defer { portsSent += 1 }
                return try portDescriptors[portsSent].withUnsafeBytes { try socket.send($0, more: more, dontWait: true) }
            }
        }
        return try replyDescriptor!.withUnsafeBytes { try socket.send($0, more: more, dontWait: true) }
    }
}

/// Makes sure that what this process sent to other processes reaches them
/// even when it exits right after sending (a server that replies, then
/// exits). libzmq writes messages from its own I/O thread; a process that
/// exits first would lose what was still queued. So cross-process channels
/// use a context of their own, and at exit every one of them is closed and
/// that context terminated: zmq_ctx_term returns once each closed socket has
/// sent what it accepted, or after its linger (2 s) at most.
final class OutboundFlush: @unchecked Sendable {
    // @unchecked Sendable: `channels` and `installed` are guarded by `lock`.
    static let shared = OutboundFlush()

    let context: ZMQContext = {
        do {
            // Blocky: terminating waits, for at most each socket's linger
            // (2 s), until libzmq has written out what it accepted.
            return try ZMQContext(blockyTermination: true)
        } catch {
            fatalError("RunLoopKit: cannot create the ZeroMQ context for cross-process sends: \(error)")
        }
    }()
    private let lock = Lock()
    private struct WeakChannel { weak var channel: SendChannel? }
    // Guarded by lock.
    private var channels: [ObjectIdentifier: WeakChannel] = [:]
    // Guarded by lock.
    private var installed = false
    // Guarded by lock: run first at exit (the tap sends what it has queued).
    private var beforeClosing: [@Sendable () -> Void] = []

    func track(_ channel: SendChannel) {
        lock.withLock {
            channels[ObjectIdentifier(channel)] = WeakChannel(channel: channel)
            if channels.count % 256 == 0 { channels = channels.filter { $0.value.channel != nil } }
        }
        installAtExit()
    }

    /// Runs `body` at exit before the channels close and the context terminates.
    func atExit(_ body: @escaping @Sendable () -> Void) {
        lock.withLock { beforeClosing.append(body) }
        installAtExit()
    }

    private func installAtExit() {
        let install: Bool = lock.withLock {
            defer { installed = true }
            return !installed
        }
        if install { atexit { OutboundFlush.shared.flushAtExit() } }
    }

    /// How long an exiting process waits for its peers to read what it sent.
    static let exitWaitSeconds: TimeInterval = 10

    private func flushAtExit() {
        let (first, open) = lock.withLock { (beforeClosing, channels.values.compactMap(\.channel)) }
        for body in first { body() }
        waitUntilPeersHaveRead()
        for channel in open { channel.closeForExit() }
        context.terminate()
    }

    /// libzmq drops what is still in the kernel socket when the peer hangs
    /// up while the receiving side is paused at its high-water mark (its
    /// stream engine turns the hang-up into an error once input resumes). So
    /// before closing, wait until the kernel says our peers have read every
    /// byte we wrote (SIOCOUTQ), steadily for a few milliseconds (libzmq's
    /// I/O thread may still be moving queued messages into the socket), or
    /// `exitWaitSeconds` at most.
    private func waitUntilPeersHaveRead() {
        let deadline = MonotonicClock.instant(secondsFromNow: Self.exitWaitSeconds)
        var quietChecks = 0
        while quietChecks < 10 && MonotonicClock.now() < deadline {
            quietChecks = rlk_unread_socket_bytes() == 0 ? quietChecks + 1 : 0
            usleep(1_000)
        }
    }
}
