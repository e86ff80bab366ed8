import Glibc
import Logging
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The reading side of one tcp socket of the process (a listener's ROUTER,
/// or a dialled connection's DEALER): each message read is checked (its
/// destination must be this instance and a tcp port of this process) and
/// handed, read into a holder of its own and never copied or moved, to its
/// port (`PortDelivery`),
/// whose loop delivers it as it delivers any message: per-port order, the
/// port's batch and its mode holding (S-SRC1-2) stay as they are. A hello
/// or welcome is answered here.
///
/// Whoever reads calls `read(limit:)`: a loop's network reader
/// (`LoopNetworkReader`), so that a message for a port of that loop
/// reaches it without waking another thread, or the network thread
/// (`NetworkThread`) when no loop reads, or when a reader stopped at a full
/// port. One reader at a time; the socket's lock is taken per message, so
/// senders interleave.
///
/// A port whose queue is full holds up every message behind it on this
/// socket (head-of-line blocking): nothing more is read until the port has
/// room, and the senders feel it as back-pressure, each for its own
/// deadline (docs/design.md, "Across machines").
final class TCPInbound: @unchecked Sendable {
    /// What one `read` did.
    enum Outcome {
        /// The socket ran dry: its next message will signal ZMQ_FD again.
        case drained
        /// It stopped at its limit with messages left, which no signal will announce.
        case more
        /// A message waits for room in its port; nothing more is read until it goes.
        case held
        /// Another reader is reading: it reads until the socket runs dry.
        case busy
        /// It stopped after a message for a port of the reader's own loop,
        /// which owes the socket a read to its end: made by the send the
        /// port's handler makes, or else at the reader's next callout
        /// (`drainOwed`, TCPInbound+AfterSend.swift).
        case deferred
    }

    // Not private: the sends' side (TCPInbound+AfterSend.swift) uses them.
    unowned let hub: NetworkHub
    let socket: Socket
    let socketLock: Lock
    /// ZMQ_FD, read once: what readers watch.
    let pollDescriptor: Int32
    /// True while a message waits for room (the network thread watches it then).
    let isHolding = Atomic<Bool>(false)
    /// Set when a reader is told to read this socket (`NetworkHub.readAgain`),
    /// cleared when one does.
    let readRequested = Atomic<Bool>(false)
    /// Set while a loop reader that stopped after a message for its own
    /// loop owes the socket a read to its end (`Outcome.deferred`), cleared
    /// when a read begins. Until then a send skips its look for input: the
    /// read that follows it makes libzmq process the socket's commands,
    /// which is all the look would do (`lookAfterSend`).
    let drainOwed = Atomic<Bool>(false)
    /// The thread whose loop's reader owes that read (its `pthread_self`),
    /// which makes it right after a send of its own (`drainAfterSend`).
    let drainThread = Atomic<UInt>(0)
    /// Messages the network thread's quarter-second reading found with
    /// nothing to announce them (no ZMQ_FD signal, no request to read): each
    /// waited for that reading, a safety net. None should; the tests check.
    let unannouncedMessages = Atomic<UInt64>(0)
    /// Reads the network thread made while loops read (a held message, a
    /// stalled reader, the quarter-second reading): each can take a
    /// message a loop's reader would have deferred; the tests count them.
    let readingsInsteadOfLoops = Atomic<UInt64>(0)
    /// Looks for input made after sends (`lookAfterSend`): a send from the
    /// handler of a port this socket's reader just handed a message to
    /// makes none (`drainOwed`); the tests count them.
    let looksMade = Atomic<UInt64>(0)
    /// The loop reader that reads this socket (NetworkHub+Readers.swift),
    /// nil while none does; and whether the socket is open (false once it
    /// closes, so that no reader watches its descriptor again). Set under
    /// the hub's lock, read under this one alone.
    private let owner = Locked<(reader: LoopNetworkReader?, isOpen: Bool)>((nil, true))
    private static let logger = Logger(label: "RunLoopKit.Network")

    // Under readerLock from here on. The state a message touches is
    // @exclusivity(unchecked): the lock makes each access exclusive.
    // U-INBOUND-STATE (docs/unsafe-sites.md).
    let readerLock = Lock()
    /// The listener this socket is (accepted connections come from its
    /// hellos), or the dialled connection it belongs to (its welcome).
    private weak var listener: TCPListener?
    private weak var dialled: TCPConnection?
    /// A listener's socket: its messages start with a routing id. (A weak
    /// load per message would cost a trip to the listener's side table.)
    private var isListener = false
    /// A listener's message's routing id, reused.
    private let routingFrame = Message()
    /// The homes the peers sent (`TCPHome`), which their messages'
    /// version-4 descriptors are read against: a dialled connection's one
    /// peer's, or on a listener each peer's by instance, with the last
    /// one found kept apart (a socket's messages mostly come from the
    /// peer the one before came from).
    // The last home found is also kept as plain values (its instance and
    // tag), which a message compares without a retain and a release.
    // U-INBOUND-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var dialledPeerHome: TCPHome?
    @exclusivity(unchecked) private var homes: [ProcessInstance: TCPHome] = [:]
    @exclusivity(unchecked) private var lastHome: TCPHome?
    @exclusivity(unchecked) private var lastHomeInstance = ProcessInstance.any
    @exclusivity(unchecked) private var lastHomeTag: UInt = 0
    /// The message being read (after its routing id): handed whole to its
    /// port, whose receiver gives an empty holder back (`PortReceiver.hand`).
    // U-INBOUND-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var message = IncomingFrames()
    /// A message whose port had no room, with its port.
    // U-INBOUND-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var held: (message: IncomingFrames, portID: UInt64)?
    @exclusivity(unchecked) private var delivery = PortDelivery()
    /// The reader that owes this socket a read to its end (`drainOwed`).
    // U-INBOUND-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) var drainReader: LoopNetworkReader?

    // Under socketLock, from here on: when a look for input after a send
    // was last made, and whether a send since made none (`lookAfterSend`).
    // U-INBOUND-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) var lookedAt: UInt64 = 0
    @exclusivity(unchecked) var lookOwed = false
    /// Sends closer together than this share one look for input.
    static let lookInterval: UInt64 = 50_000

    /// Reads ZMQ_FD under `socketLock`.
    init(hub: NetworkHub, socket: Socket, socketLock: Lock) throws(ZMQError) {
        self.hub = hub
        self.socket = socket
        self.socketLock = socketLock
        pollDescriptor = try socketLock.withLock { () throws(ZMQError) -> Int32 in
            defer { socket.releaseOwnership() }
            return try socket.fileDescriptor
        }
    }

    func attach(listener: TCPListener) {
        readerLock.withLock {
            self.listener = listener
            isListener = true
        }
    }
    func attach(dialled connection: TCPConnection) { readerLock.withLock { self.dialled = connection } }

    var reader: LoopNetworkReader? { owner.withLock { $0.reader } }
    var isOpen: Bool { owner.withLock { $0.isOpen } }
    /// Hub lock held.
    func setReader(_ reader: LoopNetworkReader?) { owner.withLock { $0.reader = reader } }

    /// The socket is closing: it has no reader from now on. Hub lock held.
    func closing() {
        owner.withLock { owner in
            owner.reader?.unwatch(pollDescriptor)
            owner = (nil, false)
        }
    }

    /// Reads up to `limit` messages and hands each to its port; `reader`
    /// is the loop reader reading, on its loop's thread, nil on the
    /// network thread. Any thread.
    /// Reading follows the traffic: when the last message read went to a
    /// port of another loop than the reader's, that loop's reader reads
    /// this socket from now on (NetworkHub+Readers.swift).
    /// With `deferring`, a loop reader stops after a message for a port of
    /// its own loop, and the rest is read later (`Outcome.deferred`).
    func read(limit: Int, by reader: LoopNetworkReader?, deferring: Bool = false) -> Outcome {
        readCounting(limit: limit, by: reader, deferring: deferring).outcome
    }

    /// `read`, and how many messages it read.
    func readCounting(limit: Int, by reader: LoopNetworkReader?, deferring: Bool = false) -> (outcome: Outcome, messages: Int) {
        guard readerLock.tryLock() else { return (.busy, 0) }
        return readHoldingLock(limit: limit, by: reader, deferring: deferring)
    }

    /// `readCounting` once its reader lock is taken; unlocks it.
    func readHoldingLock(limit: Int, by reader: LoopNetworkReader?, deferring: Bool) -> (outcome: Outcome, messages: Int) {
        readRequested.store(false, ordering: .relaxed)
        // Before the first receive takes the socket's lock: a send that
        // still sees it set is followed by that receive (`lookAfterSend`).
        if drainOwed.load(ordering: .relaxed) {
            drainOwed.store(false, ordering: .relaxed)
            drainReader = nil
        }
        var messages = 0
        let outcome = readLocked(limit: limit, by: reader, deferring: deferring, counting: &messages)
        if outcome == .deferred {
            drainReader = reader
            drainThread.store(pthread_self(), ordering: .relaxed)
            drainOwed.store(true, ordering: .relaxed)
        }
        let lastLoop = delivery.lastLoop
        delivery.lastLoop = nil
        readerLock.unlock()
        if let lastLoop, lastLoop != reader?.loopID { hub.moveReading(of: self, toLoop: lastLoop) }
        return (outcome, messages)
    }

    /// Whether ZMQ_FD signals: libzmq has commands for the socket, a new
    /// message's announcement among them. Any thread.
    var isSignalled: Bool {
        var descriptor = pollfd(fd: pollDescriptor, events: Int16(POLLIN), revents: 0)
        return poll(&descriptor, 1, 0) > 0
    }

    /// Reader lock held.
    private func readLocked(limit: Int, by reader: LoopNetworkReader?, deferring: Bool, counting messages: inout Int) -> Outcome {
        if held != nil && !retryHeld(by: reader) { return .held }
        for _ in 0..<limit {
            let received: Bool = socketLock.withLock {
                defer { socket.releaseOwnership() }
                return receiveMessage()
            }
            guard received else { return .drained }
            messages += 1
            if isListener { handleAccepted(by: reader) } else { handle(by: reader) }
            if held != nil { return .held }
            // The port's handler runs in this pass and most often sends (a
            // reply, the next request): the read to the socket's end waits
            // for after it, and stands for the look that send would make.
            if deferring, let readerLoop = reader?.loopID, delivery.lastLoop == readerLoop { return .deferred }
        }
        return .more
    }

    /// Reads the next message into `message` (a listener's routing id into
    /// `routingFrame`), kept within the bounds a port's own socket keeps.
    private func receiveMessage() -> Bool {
        do {
            if isListener {
                guard try socket.receive(into: routingFrame, dontWait: true) else { return false }
                // A ROUTER's message is whole once its first frame is here.
                guard routingFrame.hasMore else {
                    message.clear()
                    return true
                }
            }
            // Uncounted: only the reader holding the reader lock swaps the
            // holder out. U-INBOUND-STATE (docs/unsafe-sites.md).
            return try Unmanaged.passUnretained(message).withGuaranteedReference { (holder) throws(ZMQError) in
                try holder.receive(from: socket)
            }
        } catch {
            // A socket closed meanwhile (its connection broke, or exit) reads as empty.
            if !error.isContextTerminated && !socket.isClosed { Self.logger.error("tcp: receive failed: \(error)") }
            return false
        }
    }

    /// A message on a listener: [routing id, frames…]. A hello makes the
    /// peer's connection known; anything else is for a port.
    private func handleAccepted(by reader: LoopNetworkReader?) {
        guard _fastPath(message.frameCount >= 1) else { return }
        let first = message.firstBytes
        if _slowPath(WireFormat.isControl(first)) { return handleHello(first) }
        handle(by: reader)
    }

    /// A hello on a listener (a control frame after its routing id).
    // Out of line (see `handleWelcome`).
    @inline(never)
    private func handleHello(_ first: UnsafeRawBufferPointer) {
        guard let listener else { return }
        let hello = message[0]
        let routingID = Array(routingFrame.unsafeBytes)
        guard case let .hello(from, _)? = try? WireFormat.decodeControl(first), routingID == WireFormat.instanceBytes(from) else {
            return hub.drops.recordAndEmit(.badMagic, "a control frame that is not a hello, or a hello whose instance is not its routing id")
        }
        // A peer that sent its home frame reads version 4: this
        // process's home goes with the welcome, and its messages'
        // descriptors are read against the peer's. One whose reads
        // frame came after it, naming 5, reads version 5.
        var peerHome: TCPHome?
        var reads: UInt8?
        if message.keptCount >= 2 {
            do {
                peerHome = try WireFormat.decodeHome(message[1].unsafeBytes, of: from)
                reads = try Self.newestVersionRead(message)
            } catch {
                return hub.drops.recordAndEmit(PortDropReason(error), "tcp: a hello whose home or reads frame is malformed (no welcome): \(error)")
            }
        }
        let connection = TCPConnection(
            acceptedBy: listener, routingID: routingID, peer: from, home: peerHome,
            address: hello.property("Peer-Address") ?? "(unknown address)",
            descriptor: hello.sourceDescriptor ?? -1, clientKey: hello.property("User-Id"))
        if let reads, reads >= WireFormat.compactVersion { connection.peerReadsCompactMessages() }
        hub.accepted(connection)
        guard let peerHome else {
            _ = try? connection.sendControl(WireFormat.encodeControl(.welcome(from: .current)))
            return
        }
        homes[from] = peerHome
        if lastHomeInstance == from { findHome(of: from) }
        let home = hub.homeFrame()
        // The reads frame only to a hello that had one: a peer gets a
        // welcome of as many frames as its hello.
        let welcome = WireFormat.encodeControl(.welcome(from: .current))
        if (try? connection.sendControl(welcome, home: home.frame, reads: reads != nil)) == true {
            connection.peerReadsRelativeDescriptors(listing: home.listeners)
        }
    }

    /// The newest message version the sender of a hello or welcome held
    /// in `message` reads: what its third frame, a reads frame after the
    /// home frame, says; nil without one. Throws for a third frame that is
    /// not a reads frame.
    private static func newestVersionRead(_ message: IncomingFrames) throws(WireFormat.DecodeError) -> UInt8? {
        guard message.keptCount >= 3 else { return nil }
        return try WireFormat.decodeReads(message[2].unsafeBytes)
    }

    /// Gives the message just read the home of the process that sent it
    /// (none if it sent none). Reader lock held.
    @inline(__always)
    private func noteSender() {
        guard isListener else {
            return message.setSender(dialledPeerHome, tag: dialledPeerHome?.tag ?? 0)
        }
        let routingID = routingFrame.unsafeBytes
        let instance = routingID.count == 16 ? WireFormat.instance(routingID, at: 0) : .any
        if instance != lastHomeInstance { findHome(of: instance) }
        if message.senderTag != lastHomeTag { message.setSender(lastHome, tag: lastHomeTag) }
    }

    /// Makes `instance`'s home the last one found. Reader lock held.
    @inline(never)
    private func findHome(of instance: ProcessInstance) {
        lastHome = instance == .any ? nil : homes[instance]
        lastHomeInstance = instance
        lastHomeTag = lastHome?.tag ?? 0
    }

    /// `connection`, accepted by this listener, broke: its peer's home
    /// goes, unless a connection the peer made since sent another. Any
    /// thread but a reader of this socket.
    func forgetHome(of connection: TCPConnection) {
        guard let home = connection.acceptedPeerHome else { return }
        readerLock.withLock {
            guard homes[home.instance] === home else { return }
            homes[home.instance] = nil
            if lastHomeInstance == home.instance { findHome(of: home.instance) }
        }
    }

    /// A message for a port, or a dialled connection's welcome.
    private func handle(by reader: LoopNetworkReader?) {
        let first = message.firstBytes
        if _slowPath(WireFormat.isControl(first)) { return handleWelcome(first) }
        let routed: (header: WireFormat.Header, destination: WireFormat.Destination?)
        do { routed = try WireFormat.routedHeader(first) } catch {
            return hub.drops.recordAndEmit(PortDropReason(error), "tcp: \(error)")
        }
        guard let destination = routed.destination else {
            return hub.drops.recordAndEmit(.noSuchPort, "tcp: a version-\(first[4]) message names no destination (tcp carries versions 3 and 5)")
        }
        guard _fastPath(destination.instance == .current) else {
            return hub.drops.recordAndEmit(
                .wrongInstance, "tcp: a message for instance \(destination.instance), not this process's \(ProcessInstance.current)")
        }
        message.keep(checkedHeader: routed.header)
        // Only a message that carries ports reads its sender's home.
        if routed.header.hasReplyPort || routed.header.hasPortComponent { noteSender() }
        switch delivery.hand(&message, to: destination.portID, readBy: reader) {
        case .delivered: return
        case .noSuchPort:
            hub.drops.recordAndEmit(
                .noSuchPort, "tcp: a message for port \(destination.portID), which this process does not have (closed, or not a tcp port)")
        case .full: hold(for: destination.portID)
        }
    }

    /// A dialled connection's welcome (a control frame on a dialled socket).
    // Out of line, as every rare path of a message's read: its code would
    // otherwise sit between the hot parts (docs/performance.md, "Over tcp").
    @inline(never)
    private func handleWelcome(_ first: UnsafeRawBufferPointer) {
        guard let dialled, case let .welcome(from)? = try? WireFormat.decodeControl(first) else {
            return hub.drops.recordAndEmit(.badMagic, "a control frame that is not a welcome")
        }
        if message.keptCount >= 2 {
            do {
                dialledPeerHome = try WireFormat.decodeHome(message[1].unsafeBytes, of: from)
                if let reads = try Self.newestVersionRead(message), reads >= WireFormat.compactVersion {
                    dialled.peerReadsCompactMessages()
                }
            } catch {
                hub.drops.recordAndEmit(PortDropReason(error), "tcp: a welcome whose home or reads frame is malformed: \(error)")
                return hub.connectionBroke(dialled, because: "its welcome's home or reads frame is malformed (\(error))", end: .handshakeFailed)
            }
        }
        if !dialled.welcomed(by: from, sentHome: dialledPeerHome != nil) && dialled.brokenError != nil {
            hub.connectionBroke(dialled, because: "another process (instance \(from)) listens at \(dialled.remoteAddress) now", end: .replaced)
        }
    }

    /// No room in port `portID`: the message waits in its holder; reading
    /// goes on in a new one.
    @inline(never)
    private func hold(for portID: UInt64) {
        held = (message, portID)
        message = IncomingFrames()
        isHolding.store(true, ordering: .releasing)
        hub.holdingInbounds.wrappingAdd(1, ordering: .releasing)
    }

    /// Tries the held message again; true once it is gone (sent, or its port closed).
    private func retryHeld(by reader: LoopNetworkReader?) -> Bool {
        guard case (var waiting, let portID)? = held else { return true }
        switch delivery.hand(&waiting, to: portID, readBy: reader) {
        case .full: return false
        case .delivered: break
        case .noSuchPort:
            hub.drops.recordAndEmit(.noSuchPort, "tcp: port \(portID) closed while a message for it waited for room")
        }
        releaseHeld()
        return true
    }

    /// The held message is gone. Reader lock held.
    private func releaseHeld() {
        guard held != nil else { return }
        held = nil
        isHolding.store(false, ordering: .releasing)
        hub.holdingInbounds.wrappingSubtract(1, ordering: .releasing)
    }

    /// At exit, or when the socket closes: a held message goes with it, and
    /// the reader a read was owed by.
    func discardHeld() {
        readerLock.withLock {
            releaseHeld()
            // It holds its reader, which holds this socket.
            drainReader = nil
        }
    }
}
