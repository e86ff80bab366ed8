internal import CLinuxSupport
import Glibc
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Reads the process's tcp sockets on a loop that serves tcp ports: one per
/// such loop, in every mode where one of its tcp ports was scheduled. A
/// message for a port of this loop then reaches it without another
/// thread's wake-up or a system call: the loop reads it from the tcp
/// socket, hands it to the port and marks the port ready, and delivers it
/// at its next pass (docs/design.md, "Across machines"). Messages for
/// ports of other loops are handed to theirs, whose readers mark them.
///
/// It waits on an epoll set of its own holding each tcp socket's ZMQ_FD
/// (edge-triggered: a signal is an edge) and an eventfd, `again`, which
/// other threads signal when a socket must be read though no edge says
/// so. Its loop watches that set edge-triggered too, so that a reader of
/// one socket (a client's, a peer's) need not ask the set what signalled:
/// it reads its socket at every callout, and learns of `again` from a
/// flag raised with it. Stopped at its batch with messages left (no signal
/// would announce them), it puts itself back on its loop's ready list
/// instead, and reads on at the next pass. It is an auxiliary source: it
/// keeps no run going and a pass that only read handled no source
/// (S-RUN-1, S-RUN-2).
final class LoopNetworkReader: @unchecked Sendable {
    private unowned let hub: NetworkHub
    weak var loop: RunLoop?
    /// The loop's identity, compared without a weak load: a reader reading
    /// runs on its loop, which is therefore alive.
    let loopID: ObjectIdentifier
    /// The loop, uncounted: for what the reader does while it reads (it
    /// reads only in its callout, on its loop's thread, so the loop is
    /// alive), without the weak load and the loop's retain and release.
    // U-NETWORK-READER (docs/unsafe-sites.md).
    let readingLoop: Unmanaged<RunLoop>
    /// The epoll set the loop watches.
    let pollSet: Int32
    /// Signalled when the sockets must be read though no edge says so.
    let again: Int32
    /// Raised before `again` is written: a reader of one socket, which
    /// does not ask its epoll set, looks here instead.
    private let againRaised = Atomic<Bool>(false)
    private(set) var source: SocketSource!
    /// The modes the source was added to (under the hub's lock).
    var modes: Set<RunLoop.Mode> = []
    /// Ports of this loop handed a message by another thread, to be marked
    /// ready on this loop's thread.
    private let pending = Locked<[SocketSource]>([])
    /// How many times the reader ran: the network thread relieves a reader
    /// that does not run while its sockets have input.
    let runs = Atomic<UInt64>(0)
    /// Of those, runs to make a read owed (`readOnAtNextPass`) that no
    /// send made meanwhile; the tests count them.
    let fallbackRuns = Atomic<UInt64>(0)

    // The loop's thread only, from here on: unchecked, because each
    // callout's dynamic checks cost more than its `epoll_wait`.
    // U-NETWORK-READER (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var events = [epoll_event](repeating: epoll_event(), count: 16)
    @exclusivity(unchecked) private var inbounds: [TCPInbound] = []
    @exclusivity(unchecked) private var inboundsGeneration = UInt64.max
    /// The sockets whose signal a pass's `epoll_wait` gave, kept for reuse.
    @exclusivity(unchecked) private var signalled: [Int32] = []
    /// Set when a read is owed: the reader marked itself ready on its loop
    /// (no system call) and reads at its next callout.
    @exclusivity(unchecked) private var readOwed = false
    /// Set when a read stopped with messages left: the next callout reads
    /// every socket.
    @exclusivity(unchecked) private var readAllOwed = false
    /// The sockets whose read stopped after a message for a port of this
    /// loop (`TCPInbound.Outcome.deferred`): the next callout reads them to
    /// their end (the second list, the ones being read, kept for reuse).
    // U-NETWORK-READER (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var deferredSockets: [Int32] = []
    @exclusivity(unchecked) private var deferredToRead: [Int32] = []
    /// Messages read from one socket before the loop gets on with the pass:
    /// as many as a port delivers in one by default, so that a flood to a
    /// port of this loop settles at a pass's worth queued. Read faster than
    /// delivered, the port's queue would fill, and a full port's socket is
    /// the network thread's to wait on: a hop between threads every few
    /// batches (docs/performance.md, "Over tcp").
    static let batch = Port.defaultMaxMessagesPerCallout

    /// The loop's reader; made (its fds too) by the hub, which registers
    /// every tcp socket in it.
    init(hub: NetworkHub, loop: RunLoop) {
        self.hub = hub
        self.loop = loop
        loopID = ObjectIdentifier(loop)
        // U-NETWORK-READER (docs/unsafe-sites.md).
        readingLoop = Unmanaged.passUnretained(loop)
        pollSet = epoll_create1(Int32(EPOLL_CLOEXEC))
        again = eventfd(0, Int32(EFD_NONBLOCK) | Int32(EFD_CLOEXEC))
        precondition(pollSet >= 0 && again >= 0, "RunLoopKit: cannot make a loop's network reader: errno \(errno)")
        watch(again)
        // Uncounted: the hub holds every reader until its source can no
        // longer be called out. A weak reference would move the reader's
        // counts to a side table for good, where each of its retains and
        // releases takes Swift's slow path.
        // U-NETWORK-READER (docs/unsafe-sites.md).
        let reader = Unmanaged.passUnretained(self)
        source = SocketSource(auxiliaryOn: pollSet, edgeTriggered: true) { batch in
            reader.withGuaranteedReference { $0.readSockets(batch) }
        }
    }

    deinit {
        Glibc.close(pollSet)
        Glibc.close(again)
    }

    /// Whether the reader's loop is running (in any mode): a loop that is
    /// not (a thread whose loop ran only for a request of its own, then
    /// went on with other work) reads nothing, and the network thread reads
    /// its sockets instead (`NetworkThread`). Any thread.
    var loopIsRunning: Bool { loop?.currentMode != nil }

    /// Adds `descriptor` to the epoll set, edge-triggered (epoll reports it
    /// at once if it is readable). Any thread.
    func watch(_ descriptor: Int32) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | EPOLLET.rawValue
        event.data.fd = descriptor
        _ = epoll_ctl(pollSet, EPOLL_CTL_ADD, descriptor, &event)
    }

    /// Takes `descriptor` out of the epoll set. Any thread.
    func unwatch(_ descriptor: Int32) {
        _ = epoll_ctl(pollSet, EPOLL_CTL_DEL, descriptor, nil)
    }

    /// Has `source`, a port of this loop handed a message by another
    /// thread, marked ready on this loop. Any thread.
    func markReady(_ source: SocketSource) {
        pending.withLock { $0.append(source) }
        signal()
    }

    /// Makes the loop read the sockets at its next pass. Any thread.
    func signal() {
        againRaised.store(true, ordering: .releasing)
        var one: UInt64 = 1
        _ = write(again, &one, 8)
    }

    /// The source's handler: marks ready the ports other threads handed a
    /// message, then reads every socket that signalled (all of them when
    /// `again` did), handing each message to its port.
    ///
    /// Woken by a signal in a run that goes on after a source (`batch`'s
    /// limit), it stops reading a socket after a message for a port of
    /// this loop, and the rest is read after the port's handler: by the
    /// send the handler makes on that socket, right after it
    /// (`TCPInbound.drainIfOwedHere`), which then needs no look for input
    /// of its own (two system calls; `TCPInbound.lookAfterSend`), or else
    /// by this reader's next callout. A run that returns after one source
    /// reads to the end at once: its loop may not run again soon.
    private func readSockets(_ batch: CalloutBatch) -> CalloutBatch.Outcome {
        runs.wrappingAdd(1, ordering: .relaxed)
        if _slowPath(readOwed) { fallbackRuns.wrappingAdd(1, ordering: .relaxed) }
        refreshInbounds()
        let deferring = !readOwed && batch.limit == .max
        // One socket is read at every callout, whatever woke it. With more,
        // the set says which signalled; it is asked at every callout, since
        // its loop reports it once an edge, and an edge that came while
        // the reader was on its ready list already was taken with no callout.
        let readsEverySocket = inbounds.count == 1
        let raised = againRaised.load(ordering: .acquiring) && againRaised.exchange(false, ordering: .acquiringAndReleasing)
        var readAll = readAllOwed || raised
        swap(&deferredSockets, &deferredToRead)
        readOwed = false
        readAllOwed = false
        let againSignalled = readsEverySocket ? false : collectSignalled()
        readAll = readAll || againSignalled || readsEverySocket
        if _slowPath(raised || againSignalled) { markHandedReady() }
        var held = false
        for inbound in inbounds
        where readAll || signalled.contains(inbound.pollDescriptor) || deferredToRead.contains(inbound.pollDescriptor) {
            switch inbound.read(limit: Self.batch, by: self, deferring: deferring) {
            // Messages left, which no signal will announce: whoever reads the socket now reads on.
            case .more: readOn(inbound)
            case .deferred:
                // The message went to this loop, so the socket stays with
                // this reader. Most often a send from the port's handler
                // makes the read (`deferredReadMade`) and calls this off.
                deferredSockets.append(inbound.pollDescriptor)
                readOnAtNextPass()
            case .held: held = true
            case .drained, .busy: break
            }
        }
        deferredToRead.removeAll(keepingCapacity: true)
        // The network thread waits for the port's room and reads on.
        if _slowPath(held) { hub.wakeNetworkThread() }
        // Not drained while a read is owed: the loop keeps the reader on
        // its ready list, where `readOnAtNextPass` put it back.
        return CalloutBatch.Outcome(handled: false, drained: !readOwed)
    }

    // The reader's rarer paths, out of line: a round trip runs through its
    // callout once a side, and the code it runs is fetched again at every
    // wake-up (docs/performance.md, "Over tcp").

    /// With more than one socket: asks the epoll set which signalled, into
    /// `signalled`. Returns whether `again` did.
    @inline(never)
    private func collectSignalled() -> Bool {
        var againSignalled = false
        signalled.removeAll(keepingCapacity: true)
        while true {
            let count = events.withUnsafeMutableBufferPointer { epoll_wait(pollSet, $0.baseAddress, Int32($0.count), 0) }
            guard count > 0 else { break }
            for index in 0..<Int(count) {
                let descriptor = events[index].data.fd
                if descriptor == again { againSignalled = true } else { signalled.append(descriptor) }
            }
            if Int(count) < events.count { break }
        }
        return againSignalled
    }

    /// Takes `again`'s signal and marks ready the ports other threads
    /// handed a message.
    @inline(never)
    private func markHandedReady() {
        var value: UInt64 = 0
        _ = read(again, &value, 8)
        let handed = pending.withLock { sources in
            defer { sources.removeAll(keepingCapacity: true) }
            return sources
        }
        if let loop { for source in handed where source.binding.loop === loop { loop.markReady(source) } }
    }

    /// `inbound`'s read stopped at its batch with messages left, which no
    /// signal will announce: whoever reads the socket now reads on.
    @inline(never)
    private func readOn(_ inbound: TCPInbound) {
        if inbound.reader === self {
            // Told to read on, as `NetworkHub.readAgain` tells a reader: the
            // network thread's quarter-second reading then counts what it
            // takes meanwhile as announced (TCPInbound.unannouncedMessages).
            inbound.readRequested.store(true, ordering: .relaxed)
            readAllOwed = true
            readOnAtNextPass()
        } else {
            hub.readAgain(inbound)
        }
    }

    /// A send on this loop's thread made the read to the socket's end that
    /// a callout deferred (`TCPInbound.drainIfOwedHere`): the socket leaves
    /// the deferred list, and the callout that was to make the read is
    /// called off if nothing else is owed. The loop's thread, after the
    /// reader's callout (a send from a port's handler).
    func deferredReadMade(on descriptor: Int32, outcome: TCPInbound.Outcome) {
        if outcome == .deferred {
            // Deferred again: the socket stays owed, and this reader's
            // callout, the fallback, moves behind the port the message went
            // to, which runs at the next pass if its batch ended.
            // U-NETWORK-READER (docs/unsafe-sites.md): on the loop's thread.
            return readingLoop.withGuaranteedReference { loop in
                loop.unmarkReady(source)
                loop.markReady(source)
            }
        }
        if deferredSockets.last == descriptor {
            deferredSockets.removeLast()
        } else if let index = deferredSockets.firstIndex(of: descriptor) {
            deferredSockets.remove(at: index)
        }
        switch outcome {
        case .more:
            // Messages left that no signal will announce.
            readAllOwed = true
            readOnAtNextPass()
        case .held: hub.wakeNetworkThread()
        case .drained, .busy, .deferred: break
        }
        guard readOwed, !readAllOwed, deferredSockets.isEmpty else { return }
        readOwed = false
        // U-NETWORK-READER (docs/unsafe-sites.md): on the loop's thread.
        readingLoop.withGuaranteedReference { $0.unmarkReady(source) }
    }

    /// The loop's thread: the reader is called again at the loop's next
    /// pass, after the sources ready before it (a port it just handed a
    /// message to among them).
    private func readOnAtNextPass() {
        guard !readOwed else { return }
        readOwed = true
        // U-NETWORK-READER (docs/unsafe-sites.md): on the loop's thread,
        // without the weak load and the retain of `loop`.
        readingLoop.withGuaranteedReference { $0.markReady(source) }
    }

    private func refreshInbounds() {
        let current = hub.generation.load(ordering: .acquiring)
        guard current != inboundsGeneration else { return }
        inboundsGeneration = current
        inbounds = hub.inbounds(readBy: self)
    }
}
