internal import CLinuxSupport
import Glibc
import Logging
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The thread that watches every tcp socket of the process (`NetworkHub`):
/// it learns of a connection's end from its monitor (a disconnect, a
/// heartbeat missed, a handshake refused) or from the tcp connection bound
/// (S-NET-3), and keeps the authorized keys current. It reads the sockets
/// (`TCPInbound`) when no loop does: while a loop serves tcp ports, a
/// loop's network reader reads each socket (`LoopNetworkReader`,
/// NetworkHub+Readers.swift), and this thread reads only a socket a reader
/// left held up by a full port, a socket whose reader does not run while it
/// has input (its loop not running, busy, or in another mode: checked every
/// `stallCheckMilliseconds`), and, every quarter of a second, whatever no
/// loop has read.
final class NetworkThread: @unchecked Sendable {
    private unowned let hub: NetworkHub
    /// Filled when the thread has closed its sockets and ended.
    let finished = Completion<Void>()
    private let stopDeadline = Atomic<UInt64>(0)
    private static let logger = Logger(label: "RunLoopKit.Network")

    // Network thread only, from here on. A wake-up that finds nothing to
    // do allocates nothing and reads no monitor that has not signalled:
    // while two loops read tcp, the thread wakes every
    // `stallCheckMilliseconds`, idle or not.
    private var lastHousekeeping: UInt64 = 0
    private var listeners: [TCPListener] = []
    private var dialled: [TCPConnection] = []
    /// The listeners' reading sides, then the dialled connections'.
    private var inbounds: [TCPInbound] = []
    private var socketsGeneration = UInt64.max
    /// Each socket's monitor's descriptor (listeners, then dialled
    /// connections; nil: none, or it could not be read), and whether its
    /// monitor is read at the next turn: every monitor when the sockets
    /// change or the thread did not wait, else those whose descriptor
    /// signalled (each read takes every queued event, so a monitor that
    /// has not signalled since holds none). A monitor closed since its
    /// connection broke moves the hub's generation first, so a number
    /// reused meanwhile costs one needless read until the next refresh.
    private var monitorDescriptors: [Int32?] = []
    private var monitorsToRead: [Bool] = []
    /// What a wait polls, kept between waits.
    private var polled: [pollfd] = []
    /// Messages read from one socket before the others get a turn.
    private static let batch = 64
    /// How often a socket's reader is checked for a stall while two loops
    /// or more read: a socket with input for two checks running, its reader
    /// not having run in between, is read here.
    static let stallCheckMilliseconds: Int32 = 10
    private var lastStallCheck: UInt64 = 0
    /// Each of `inbounds` at the last check: its reader's run count, and
    /// whether it had input; and whether this check found it stalled.
    private var lastSeen: [(runs: UInt64, input: Bool)] = []
    private var stalled: [Bool] = []

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
            refreshSockets()
            let readers = hub.activeReaders.load(ordering: .acquiring)
            let loopsRead = readers > 0
            // With one reading loop, what its stall holds up is its own (a
            // hello aside, which the quarter-second reading takes): no check.
            let checksStalls = readers > 1
            readMonitors()
            // Every quarter of a second, what no reading loop took is read here.
            let fallback = housekeeping(dialled) && loopsRead
            let stallsChecked = checksStalls && checkStalls()
            var busy = false
            for (index, inbound) in inbounds.enumerated() {
                let wasHolding = inbound.isHolding.load(ordering: .acquiring)
                let isStalled = stallsChecked && stalled[index]
                guard !loopsRead || wasHolding || fallback || isStalled else { continue }
                // Read only because a quarter of a second passed: what it finds
                // with nothing announcing it waited for this reading.
                let safetyNetOnly = loopsRead && !wasHolding && !isStalled
                let announced = !safetyNetOnly || inbound.isSignalled || inbound.readRequested.load(ordering: .relaxed)
                    || inbound.drainOwed.load(ordering: .relaxed)
                let (outcome, messages) = inbound.readCounting(limit: Self.batch, by: nil)
                if loopsRead && outcome != .busy { inbound.readingsInsteadOfLoops.wrappingAdd(1, ordering: .relaxed) }
                if !announced && messages > 0 {
                    inbound.unannouncedMessages.wrappingAdd(UInt64(messages), ordering: .relaxed)
                    Self.logger.debug("tcp: the quarter-second reading found \(messages) message(s) nothing had announced")
                }
                if !loopsRead {
                    busy = outcome == .more || busy
                } else if outcome == .more || (wasHolding && outcome != .held) {
                    // Messages are left, and no signal will announce them: its reader reads on.
                    hub.readAgain(inbound)
                }
            }
            let looksOwed = makeOwedLooks()
            if busy {
                // Not waiting, it learns nothing of the monitors: all are read.
                for index in monitorsToRead.indices { monitorsToRead[index] = true }
            } else {
                waitForInput(watchingSockets: !loopsRead, checkingStalls: checksStalls, looksOwed: looksOwed)
            }
        }
    }

    /// The listeners, dialled connections and their reading sides, read
    /// again from the hub only when its generation moved (a socket came or
    /// went); then every monitor is read, and each socket's last stall
    /// check stays its own.
    private func refreshSockets() {
        let current = hub.generation.load(ordering: .acquiring)
        guard current != socketsGeneration else { return }
        socketsGeneration = current
        (listeners, dialled) = hub.state.withLock { state in
            (Array(state.listeners.values), state.open.values.filter(\.isDialled))
        }
        let seen = Dictionary(zip(inbounds.map { ObjectIdentifier($0) }, lastSeen), uniquingKeysWith: { first, _ in first })
        inbounds = listeners.map(\.inbound) + dialled.compactMap(\.inbound)
        lastSeen = inbounds.map { seen[ObjectIdentifier($0)] ?? (0, false) }
        stalled = Array(repeating: false, count: inbounds.count)
        monitorDescriptors = listeners.map { try? $0.monitor.fileDescriptor } + dialled.map { try? $0.monitor?.fileDescriptor }
        monitorsToRead = Array(repeating: true, count: monitorDescriptors.count)
    }

    // MARK: - Connection events

    /// Reads the events of the monitors that may have some; a monitor
    /// without a descriptor is read at every turn.
    private func readMonitors() {
        for (index, listener) in listeners.enumerated() where monitorsToRead[index] {
            readEvents(of: listener)
            monitorsToRead[index] = monitorDescriptors[index] == nil
        }
        for (offset, connection) in dialled.enumerated() where monitorsToRead[listeners.count + offset] {
            readEvents(of: connection)
            monitorsToRead[listeners.count + offset] = monitorDescriptors[listeners.count + offset] == nil
        }
    }

    private func readEvents(of listener: TCPListener) {
        while let event = try? listener.monitor.next(dontWait: true) {
            guard event.kind == .disconnected else { continue }
            let lost = hub.state.withLock { state in
                state.open.values.first { !$0.isDialled && $0.acceptedDescriptor == event.value && $0.brokenError == nil }
            }
            if let lost { hub.connectionBroke(lost, because: "the peer disconnected, or its heartbeats stopped", end: .lost) }
        }
    }

    private func readEvents(of connection: TCPConnection) {
        guard let monitor = connection.monitor else { return }
        while let event = try? monitor.next(dontWait: true) {
            let (reason, end): (String?, TCPConnectionEnd) = switch event.kind {
            case .disconnected: ("the peer disconnected, or its heartbeats stopped", .lost)
            case .closed: ("the connection closed", .lost)
            case .handshakeFailedAuth: ("the server refused this process's key (its authorized-keys file does not list it)", .handshakeFailed)
            case .handshakeFailedProtocol: ("the handshake failed: the peer does not speak this security (a wrong server key, or plain text against CURVE)", .handshakeFailed)
            case .handshakeFailedNoDetail: ("the handshake failed", .handshakeFailed)
            default: (nil, .lost)
            }
            guard let reason, connection.brokenError == nil else { continue }
            // What the peer sent before it went is delivered, not closed away with the socket.
            if let inbound = connection.inbound { while inbound.read(limit: Self.batch, by: nil) == .more {} }
            hub.connectionBroke(connection, because: reason, end: end)
        }
    }

    /// Connections past the connection bound without a welcome break; every
    /// quarter of a second (then it returns true), loops gone lose their
    /// readers, the authorized keys are read again if they changed, and the
    /// connections of revoked keys closed.
    private func housekeeping(_ dialled: [TCPConnection]) -> Bool {
        let now = MonotonicClock.now()
        for connection in dialled {
            if let broken = connection.brokenError {
                // Broken by a sender that waited out the bound, or spare: closed here.
                let reason = if case let .connectionLost(_, _, reason) = broken { reason } else { "\(broken)" }
                hub.connectionBroke(connection, because: reason, end: connection.end ?? .closed)
            } else if !connection.isReady && now &- connection.startedAt >= NetworkHub.connectionBoundNanoseconds {
                hub.connectionBroke(connection, because: "no connection within the tcp connection bound", end: .connectionBound)
            }
        }
        guard now &- lastHousekeeping >= 250_000_000 else { return false }
        lastHousekeeping = now
        hub.pruneReaders()
        guard let authorized = hub.state.withLock({ $0.authorized }) else { return true }
        // Taken, not just refreshed: a handshake's refresh (the ZAP
        // handler's, on another thread) may have seen the change first.
        _ = authorized.refresh()
        let revoked = Set(authorized.takeRevoked().map(\.z85))
        guard !revoked.isEmpty else { return true }
        let closing = hub.state.withLock { state in
            state.open.values.filter { !$0.isDialled && $0.clientKey.map(revoked.contains) == true }
        }
        for connection in closing {
            // libzmq has no call to drop one peer of a ROUTER: shutting its
            // socket down makes libzmq see the connection end.
            shutdown(connection.acceptedDescriptor, Int32(SHUT_RDWR))
            hub.connectionBroke(connection, because: "its key was revoked", end: .keyRevoked)
        }
        return true
    }

    /// Every `stallCheckMilliseconds` (then it returns true, and `stalled`
    /// says which of `inbounds` are): the sockets that have had input
    /// (their ZMQ_FD readable, not consumed) at this check and the last,
    /// while their reader did not run, or that no reader reads.
    private func checkStalls() -> Bool {
        let now = MonotonicClock.now()
        guard now &- lastStallCheck >= UInt64(Self.stallCheckMilliseconds) * 1_000_000 else { return false }
        lastStallCheck = now
        // Worked on as locals, taken out of the thread's properties (which
        // then hold empty arrays, so nothing is copied): an access to a
        // property of a class is checked for exclusivity at run time.
        let inbounds = self.inbounds
        var polled = Self.take(&self.polled), seen = Self.take(&lastSeen), stalled = Self.take(&self.stalled)
        defer { (self.polled, lastSeen, self.stalled) = (polled, seen, stalled) }
        // One poll for all: a process may have dialled many peers.
        polled.removeAll(keepingCapacity: true)
        for inbound in inbounds { polled.append(pollfd(fd: inbound.pollDescriptor, events: Int16(POLLIN), revents: 0)) }
        _ = poll(&polled, nfds_t(polled.count), 0)
        for (index, inbound) in inbounds.enumerated() {
            guard let reader = inbound.reader else {
                stalled[index] = true
                seen[index] = (0, false)
                continue
            }
            // A read its reader owes counts as input: no signal announces what it will find.
            let input = polled[index].revents & Int16(POLLIN) != 0 || inbound.drainOwed.load(ordering: .relaxed)
            let runs = reader.runs.load(ordering: .relaxed)
            // A reader whose loop is not running (a thread that ran it only
            // for a request of its own) will not read: at once, not at the
            // second check. Watching such sockets instead woke this thread
            // at every command a flood's sender gets (plain tcp throughput
            // fell to a tenth).
            let last = seen[index]
            stalled[index] = input && (!reader.loopIsRunning || (last.input && last.runs == runs))
            seen[index] = (runs, input)
        }
        return true
    }

    /// Makes the looks for input that sends left owed and whose interval
    /// has passed (`TCPInbound.lookAfterSend`); true while some stay owed,
    /// and then the hub's flag stays up, so senders need not wake the thread.
    private func makeOwedLooks() -> Bool {
        guard hub.looksOwed.exchange(false, ordering: .acquiringAndReleasing) else { return false }
        var owed = false
        for inbound in inbounds where !inbound.makeOwedLook() { owed = true }
        if owed { hub.looksOwed.store(true, ordering: .releasing) }
        return owed
    }

    /// Sleeps until a socket may have input (when no loop reads them), a
    /// held message's port has room, a monitor reports, the hub wakes the
    /// thread, or a quarter of a second passes (housekeeping).
    private func waitForInput(watchingSockets: Bool, checkingStalls: Bool, looksOwed: Bool) {
        polled.removeAll(keepingCapacity: true)
        polled.append(pollfd(fd: hub.wakeDescriptor, events: Int16(POLLIN), revents: 0))
        // A monitor without a descriptor polls as -1, which poll skips, so
        // that the monitors' entries stay at their indices.
        for descriptor in monitorDescriptors { polled.append(pollfd(fd: descriptor ?? -1, events: Int16(POLLIN), revents: 0)) }
        if watchingSockets {
            for inbound in inbounds { polled.append(pollfd(fd: inbound.pollDescriptor, events: Int16(POLLIN), revents: 0)) }
        }
        // A held message is retried when its port makes room (`roomMade`
        // wakes the thread), and every 20 ms besides; an owed look is made
        // at the next millisecond; while loops read, their readers are
        // checked for stalls.
        let holding = hub.holdingInbounds.load(ordering: .acquiring) > 0
        let timeout: Int32 = looksOwed ? 1 : checkingStalls && !inbounds.isEmpty ? Self.stallCheckMilliseconds : holding ? 20 : 250
        _ = poll(&polled, nfds_t(polled.count), timeout)
        if polled[0].revents != 0 {
            var count: UInt64 = 0
            _ = read(hub.wakeDescriptor, &count, 8)
        }
        for index in monitorDescriptors.indices where polled[1 + index].revents != 0 { monitorsToRead[index] = true }
    }

    /// `array`'s elements, leaving it empty: no copy, as the elements are
    /// the caller's alone.
    private static func take<Element>(_ array: inout [Element]) -> [Element] {
        var taken: [Element] = []
        swap(&taken, &array)
        return taken
    }

    /// At exit: every socket closed, lingering until `deadline`.
    private func closeEverything(lingerUntil deadline: UInt64) {
        let linger = OutboundFlush.millisecondsLeft(until: deadline)
        let (listeners, open) = hub.state.withLock { state in
            (Array(state.listeners.values), Array(state.open.values))
        }
        for connection in open { connection.close(lingerMilliseconds: linger) }
        for listener in listeners { listener.close(lingerMilliseconds: linger) }
        finished.fill(.success(()))
    }
}
