internal import CLinuxSupport
import Glibc
import Logging
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The receiving half of a local port: a ZeroMQ PULL socket bound at the
/// port's inproc endpoint and at its ipc paths, read by the port's socket
/// source on its loop's thread (S-SRC1-1). The path in: socket → receiver
/// (raw frames, `IncomingFrames`) → `MessageDecoder` → the port's handler.
///
/// Input from any peer is checked by the decoder before it becomes a
/// PortMessage: a malformed, truncated, oversized or wrong-version message
/// is read to its end, dropped, counted and logged, and the next one is
/// served (S-PORT-7). ZMQ_MAXMSGSIZE makes libzmq itself disconnect an ipc
/// peer that announces a frame over the limit.
final class PortReceiver: @unchecked Sendable {
    // @unchecked Sendable: the socket and scratch messages are used under
    // `lock` only: by the loop thread receiving, or by invalidate closing.
    // The state under it is @exclusivity(unchecked): the lock makes each
    // access exclusive, and the dynamic check would run at every one.
    let socket: Socket
    /// The port's address, for diagnostics.
    let address: PortAddress
    private let lock = Lock()
    // Guarded by lock.
    // U-RECEIVER-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var isClosed = false
    // Guarded by lock: the ipc paths bound, unlinked at close: libzmq closes
    // listeners later, on its own thread, or never if the process exits first.
    private var ipcPaths: [String] = []
    // Guarded by lock: the frames of the next message, received and not yet
    // decoded (by `hasInput`, or by `receive`); reused for every message.
    // (A constant: a `var` would be retained and released at every use.)
    private let frames = IncomingFrames()
    // Guarded by lock: messages handed back by a message stream that took
    // them in and never handed them out (S-ASYNC-2), oldest first: they
    // come before anything in the socket, `frames` included. Read (its
    // emptiness) on every receive.
    // U-RECEIVER-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var requeued: [IncomingFrames] = []
    // Guarded by lock: messages a tcp socket's reader handed over
    // (`hand`), a ring of holders: `handedCount` of them from `handedHead`
    // hold messages, oldest first; they come after `frames` and before the
    // socket, which carries only this process's own sends (docs/design.md,
    // "Across machines"). The others are empty, and a reader handing a
    // message takes one in exchange; a holder whose message was taken stays
    // in its slot. Its size is a power of two, doubled when full.
    // U-RECEIVER-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var handed: [IncomingFrames] = []
    @exclusivity(unchecked) private var handedHead = 0
    /// How many handed messages wait: the one word the message path reads
    /// when none do.
    @exclusivity(unchecked) private var handedCount = 0
    /// The socket's last read found it empty (`receiveFramesUnlessDry`).
    @exclusivity(unchecked) private var socketRanDry = false
    // Guarded by lock: the message a batch reads in place
    // (`takeInPlaceMessage`), kept here between batches; a nested batch,
    // finding it taken, makes its own.
    // U-RECEIVER-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var spareInPlaceMessage: InPlaceMessage?
    // Guarded by lock, and on the message path.
    // U-RECEIVER-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var decoder = MessageDecoder()
    /// What the port dropped, per reason (S-PORT-7).
    let drops: DropAccount
    /// Whether other processes send here (ipc, tcp): over a connection,
    /// whose read buffers a decoded message gives back at once.
    private let receivesFromConnections: Bool
    /// ZMQ_FD, read once at creation.
    let pollDescriptor: Int32

    /// Messages a port's receive queue holds before senders wait (ZMQ_RCVHWM).
    static let highWaterMark: Int32 = 1000
    /// Receivers alive in this process, for leak tests. Changed in `init`
    /// and `deinit` only, never per message.
    static let liveCount = Atomic<Int>(0)
    private static let logger = Logger(label: "RunLoopKit.Port")
    /// umask is per process: binds that set it are serialised.
    private static let umaskLock = Lock()

    init(address: PortAddress) throws(PortError) {
        self.address = address
        receivesFromConnections = address.reach != .process
        drops = DropAccount(portName: "Port(\(address))")
        do {
            socket = try ZMQContext.shared.makeSocket(.pull)
            try socket.setReceiveHighWaterMark(Self.highWaterMark)
            try socket.setMaxMessageSize(Int64(WireFormat.maxFrameBytes))
            try socket.setLinger(milliseconds: 0)
            try socket.bind(address.inprocEndpoint)
            pollDescriptor = try socket.fileDescriptor
        } catch {
            throw .zeroMQ(error)
        }
        // Counted from here, where the receiver is whole: a throw below
        // still runs deinit.
        Self.liveCount.wrappingAdd(1, ordering: .relaxed)
        PortRegistry.shared.cleanUpAtExit()
        do {
            try address.route.bind(self)
        } catch {
            socket.close()
            throw error
        }
        socket.releaseOwnership()
    }

    deinit {
        Self.liveCount.wrappingSubtract(1, ordering: .relaxed)
    }

    var droppedCount: UInt64 { drops.totalCount }

    /// Binds an ipc path, readable and writable by this user only: the umask
    /// is 0177 during the bind, so the socket file is never open to others,
    /// not even for a moment (S-PORT-6).
    func bindIPC(_ path: String) throws(PortError) {
        guard path.utf8.count <= WireFormat.maxIPCPathBytes else {
            throw .pathTooLong(path, limit: WireFormat.maxIPCPathBytes)
        }
        try lock.withLock { () throws(PortError) -> Void in
            guard !isClosed else { throw .invalidPort(path) }
            defer { socket.releaseOwnership() }
            try Self.umaskLock.withLock { () throws(PortError) -> Void in
                let previous = rlk_umask(0o177)
                defer { _ = rlk_umask(previous) }
                do throws(ZMQError) { try socket.bind("ipc://" + path) } catch { throw .zeroMQ(error) }
            }
            ipcPaths.append(path)
        }
    }

    func unbindIPC(_ path: String) {
        lock.withLock {
            guard !isClosed else { return }
            try? socket.unbind("ipc://" + path)
            socket.releaseOwnership()
            if ipcPaths.contains(path) { unlink(path) }
            ipcPaths.removeAll { $0 == path }
        }
    }

    /// On the loop thread: whether a message is waiting. It decodes nothing:
    /// the answer is a non-blocking receive of the next message's raw frames,
    /// kept for `receive()` (docs/design.md, "Sleeping and waking"). No ZMQ_EVENTS read is
    /// needed when it finds nothing: a receive that finds the queue empty
    /// has libzmq process its pending commands, which empties ZMQ_FD and
    /// leaves libzmq's pipes marked "reader asleep", so the next message
    /// signals ZMQ_FD again and the loop wakes for it. (Reading ZMQ_EVENTS
    /// as well cost two more system calls a message.)
    func hasInput() -> Bool {
        lock.withLock {
            guard !isClosed else { return false }
            defer { socket.releaseOwnership() }
            return !requeued.isEmpty || frames.isHolding || handedCount > 0 || receiveFrames(into: frames)
        }
    }

    /// Puts `messages` back at the head of the queue, in their order, ahead
    /// of everything that arrived after them: a message stream's messages
    /// that were never handed out (S-ASYNC-2). The next handler or stream
    /// decodes them as any arrival. One that no longer fits the wire limits
    /// once encoded again (its port descriptors written in the current
    /// version, longer than an old peer's: a message within a few bytes of
    /// 256 MiB) is counted and logged as an oversized drop. Any thread; the
    /// port is scheduled nowhere while it is called.
    func requeue(_ messages: [PortMessage]) {
        var held: [IncomingFrames] = []
        for message in messages {
            do throws(PortError) {
                let frames = IncomingFrames()
                frames.hold(copiesOf: try message.wireFrames())
                held.append(frames)
            } catch {
                drops.record(.oversized, "message \(message.msgid) handed back by a message stream could not be queued again: \(error)")
            }
        }
        lock.withLock {
            guard !isClosed else { return }
            requeued.insert(contentsOf: held, at: 0)
        }
        drops.emitPending()
    }

    /// A tcp socket's reader hands over a message for this port (the
    /// holder it read it into, queued as it is: nothing copied or moved;
    /// queued, `message` is an empty holder of this receiver's for the
    /// reader's next message), after what was handed before (per-sender
    /// order: one sender's messages come over one socket, read in order).
    /// Full at `highWaterMark` messages, as the socket is. Any thread.
    func hand(_ message: inout IncomingFrames) -> Handing {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { return .closed }
        guard handedCount < Int(Self.highWaterMark) else { return .full }
        if handedCount == handed.count { growHanded() }
        swap(&message, &handed[(handedHead &+ handedCount) & (handed.count &- 1)])
        handedCount += 1
        return .queued(first: handedCount == 1)
    }

    /// Doubles the ring of handed messages (it is full), its messages
    /// first, in order, then new empty holders. Lock held.
    private func growHanded() {
        let mask = handed.count &- 1, size = max(4, handed.count * 2)
        var grown: [IncomingFrames] = []
        grown.reserveCapacity(size)
        for offset in 0..<handedCount { grown.append(handed[(handedHead &+ offset) & mask]) }
        while grown.count < size { grown.append(IncomingFrames()) }
        handed = grown
        handedHead = 0
    }

    /// Closed: a reader's cache of receivers lets it go.
    var isOpen: Bool { lock.withLock { !isClosed } }

    /// Moves the oldest handed message into `frames` (there is one). Lock held.
    @inline(never)
    private func takeHanded(into frames: IncomingFrames) -> Bool {
        popHanded().withGuaranteedReference { $0.move(to: frames) }
        return true
    }

    /// Decodes the oldest handed message (there is one) into `inbox`; its holder is kept. Lock held.
    @inline(never)
    private func decodeHanded(into inbox: inout PortMessage) -> Received {
        popHanded().withGuaranteedReference { (holder) -> Received in
            defer { holder.clearAndRelease() }
            do throws(WireFormat.DecodeError) {
                return .message(traceID: try decoder.decode(holder, into: &inbox))
            } catch {
                return countMalformed(error)
            }
        }
    }

    /// Takes the oldest handed message's holder off the queue, unretained:
    /// it stays in its slot, to be emptied by the caller before the lock
    /// goes (a reader may then take it for its next message). The network
    /// thread, waiting for a full receiver's room, is told. Lock held.
    // U-RECEIVER-STATE (docs/unsafe-sites.md).
    private func popHanded() -> Unmanaged<IncomingFrames> {
        let wasFull = handedCount >= Int(Self.highWaterMark)
        let holder = Unmanaged.passUnretained(handed[handedHead])
        handedHead = (handedHead &+ 1) & (handed.count &- 1)
        handedCount -= 1
        if wasFull { NetworkHub.shared.roomMade() }
        return holder
    }

    /// At process exit: removes the socket files without touching libzmq
    /// (which may be mid-shutdown), so that no file outlives the process.
    func unlinkFilesAtExit() {
        lock.withLock { for path in ipcPaths { unlink(path) } }
    }

    /// Runs `body`, a sender's connect to this receiver's inproc endpoint,
    /// while the receiver is open; false, running nothing, once it is closed.
    func whileOpen(_ body: () throws(ZMQError) -> Void) throws(ZMQError) -> Bool {
        try lock.withLock { () throws(ZMQError) -> Bool in
            guard !isClosed else { return false }
            try body()
            return true
        }
    }

    /// Closes the socket (unbinding and unlinking its ipc files). Any thread.
    func close() {
        lock.withLock {
            guard !isClosed else { return }
            isClosed = true
            frames.clear()
            requeued.removeAll()
            handed.removeAll()
            handedHead = 0
            handedCount = 0
            spareInPlaceMessage = nil
            decoder = MessageDecoder()
            socket.close()
            for path in ipcPaths { unlink(path) }
            ipcPaths.removeAll()
        }
    }

    /// On the loop thread: decodes the next message into `inbox`, a batch's
    /// received message (see `Port.deliver`), whose storage it reuses, if
    /// `batch` admits it (`CalloutBatch.admission()`, asked once the
    /// message is here and before it is decoded: a stop or a remove that
    /// returned before the message was sent keeps it from this batch).
    /// Finding the queue empty ends the batch: the inbox's components array
    /// goes back to the decoder for the next batch.
    func receive(into inbox: inout PortMessage, admittedBy batch: borrowing CalloutBatch) -> Received {
        lock.withLock {
            guard !isClosed else { return .empty }
            defer { socket.releaseOwnership() }
            decoder.lend(to: &inbox)
            // Apart, so that the usual path stays as it was: a message a
            // stream handed back comes before anything from the socket.
            if !requeued.isEmpty {
                guard batch.admission() == .admitted else { return .notAdmitted }
                return decodeRequeued(into: &inbox)
            }
            // A handed message is decoded where its reader put it (no move).
            if !frames.isHolding && handedCount > 0 {
                guard batch.admission() == .admitted else { return .notAdmitted }
                return decodeHanded(into: &inbox)
            }
            guard frames.isHolding || receiveFramesUnlessDry(into: frames, batch) else {
                decoder.takeBack(from: &inbox)
                return .empty
            }
            guard batch.admission() == .admitted else { return .notAdmitted }
            // A port other processes reach reads their messages from a
            // connection's buffer, given back at once (`clearAndRelease`);
            // an inproc port's frames come from its senders' pools, which
            // the next receive gives back for nothing.
            defer { if receivesFromConnections { frames.clearAndRelease() } else { frames.clear() } }
            do throws(WireFormat.DecodeError) {
                return .message(traceID: try decoder.decode(frames, into: &inbox))
            } catch {
                return countMalformed(error)
            }
        }
    }

    /// Decodes the oldest message a stream handed back (`requeue`). Lock held.
    @inline(never)
    private func decodeRequeued(into inbox: inout PortMessage) -> Received {
        let held = requeued.removeFirst()
        defer { held.clear() }
        do throws(WireFormat.DecodeError) {
            return .message(traceID: try decoder.decode(held, into: &inbox))
        } catch {
            return countMalformed(error)
        }
    }

    /// Ends a batch that stopped before the queue ran dry (its limit, a
    /// stop): the inbox's components array is kept for the next batch.
    func endBatch(_ inbox: inout PortMessage) {
        lock.withLock {
            guard !isClosed else { return }
            decoder.takeBack(from: &inbox)
        }
    }

    /// On the loop thread: receives the next message into `message`, the
    /// batch's (`takeInPlaceMessage`), where the handler reads it: a port
    /// closed meanwhile from another thread never touches it. (A message
    /// the readiness check read ahead is moved there.) Checks it and
    /// resolves its ports without copying it out (`PortMessageView`);
    /// `replyPort` is the batch's (see `MessageDecoder.decodeInPlace`).
    /// Only if `batch` admits it, as `receive(into:admittedBy:)` says.
    func receiveInPlace(into message: InPlaceMessage, replyPort: inout Port?, admittedBy batch: borrowing CalloutBatch) -> Received {
        lock.lock()
        defer { lock.unlock() }
        guard !isClosed else { return .empty }
        defer { socket.releaseOwnership() }
        message.forgetDecoded()
        if !requeued.isEmpty || frames.isHolding {
            guard batch.admission() == .admitted else { return .notAdmitted }
            if !requeued.isEmpty { requeued.removeFirst().move(to: message.frames) } else { frames.move(to: message.frames) }
        } else {
            guard (handedCount > 0 && takeHanded(into: message.frames)) || receiveFramesUnlessDry(into: message.frames, batch)
            else { return .empty }
            guard batch.admission() == .admitted else {
                // Rare: kept where the next receive looks first.
                message.frames.move(to: frames)
                return .notAdmitted
            }
        }
        do throws(WireFormat.DecodeError) {
            try decoder.decodeInPlace(message, replyPort: &replyPort)
            return .message(traceID: message.header.traceID)
        } catch {
            message.clear()
            return countMalformed(error)
        }
    }

    /// The message a batch reads in place: the one kept between batches,
    /// or a new one (the first batch, or a batch nested in a handler of
    /// another).
    func takeInPlaceMessage() -> InPlaceMessage {
        lock.lock()
        defer { lock.unlock() }
        var message: InPlaceMessage?
        swap(&message, &spareInPlaceMessage)
        return message ?? InPlaceMessage()
    }

    /// A batch's in-place message back, emptied (a large message's buffers
    /// released now), kept for the next batch.
    func returnInPlaceMessage(_ message: InPlaceMessage) {
        lock.lock()
        defer { lock.unlock() }
        message.clear()
        if spareInPlaceMessage == nil && !isClosed { spareInPlaceMessage = message }
    }

    /// A malformed message: counted, reported as dropped. Its log line (at
    /// most one per reason a second) is written by the delivering batch,
    /// once this lock is released (`DropAccount.emitPending`).
    private func countMalformed(_ error: WireFormat.DecodeError) -> Received {
        drops.record(PortDropReason(error), error.description)
        return .dropped
    }

    /// `receiveFrames`, unless the socket ran dry at its last read and its
    /// loop has not reported its descriptor since: then nothing can be
    /// there (that empty read re-armed ZMQ_FD, and only this receiver reads
    /// the socket), and the read, two system calls, is skipped. A batch of
    /// messages a tcp reader handed over ends so. Lock held, loop thread.
    private func receiveFramesUnlessDry(into frames: IncomingFrames, _ batch: borrowing CalloutBatch) -> Bool {
        if socketRanDry && !batch.takeDescriptorReport() { return false }
        return receiveFrames(into: frames)
    }

    /// Receives the next message's raw frames into `frames` (the
    /// receiver's own, or a batch's in-place message's; no tcp connection's,
    /// so with no sender's home); false when the queue is empty. Lock held.
    private func receiveFrames(into frames: IncomingFrames) -> Bool {
        frames.setSender(nil, tag: 0)
        do {
            let received = try frames.receive(from: socket)
            socketRanDry = !received
            return received
        } catch {
            // Rare (the context ending): logged as it happens, under this
            // lock, which a log handler must not take.
            Self.logger.error("port \(address): receive failed: \(error)")
            return false
        }
    }
}
