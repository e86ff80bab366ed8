import Glibc
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What a send owes a tcp socket's readers (docs/design.md, "Across
/// machines"): libzmq may process the socket's commands inside a send, and
/// so take the readiness signal (ZMQ_FD is edge-triggered) its readers
/// sleep on. Someone must then make libzmq process them again and see
/// whether input came: a look (ZMQ_EVENTS), or a read to the socket's end.
extension TCPInbound {
    /// After a send, socket lock held: the socket is looked at (ZMQ_EVENTS)
    /// and its readers told if it has input. A look costs two system
    /// calls, as much as the rest of a send, so sends closer together than
    /// `lookInterval` share one: a send that skips it leaves it owed, and
    /// the network thread makes it within a millisecond or two if no later
    /// send did. No look at all while a read to the socket's end is owed
    /// (`drainOwed`): that read comes after this send.
    func lookAfterSend() {
        if drainOwed.load(ordering: .relaxed) { return }
        let now = MonotonicClock.now()
        if now &- lookedAt >= Self.lookInterval {
            look(at: now)
        } else if !lookOwed {
            lookOwed = true
            hub.lookOwed()
        }
    }

    /// After a send, socket lock released: if this thread's loop reader
    /// owes the socket a read to its end (it stopped after a message for a
    /// port of its loop, whose handler most often sends: this send), the
    /// read is made here and now, and the reader's callout that was to
    /// make it is called off. The read is the look the send skipped. A
    /// reply's send: the thread gives way to the I/O thread before it.
    @inline(__always)
    func drainIfOwedHere() {
        guard drainOwed.load(ordering: .relaxed), drainThread.load(ordering: .relaxed) == pthread_self() else { return }
        drainAfterSend()
    }

    @inline(never)
    private func drainAfterSend() {
        // The send woke libzmq's I/O thread to write the message; if it
        // shares this CPU it would wait for the rest of our pass, so the
        // loop gives way first (docs/design.md, "How a loop thread is
        // scheduled").
        sched_yield()
        // A read under way (this thread's own, a send from inside it)
        // reads to the end, or leaves its reader owing the rest.
        guard readerLock.tryLock() else { return }
        // Taken, passed on as the optional it is, and consumed by the last
        // call: unwrapped and wrapped again, or kept to the end of the
        // scope, it was copied (a retain and a release).
        let reader = drainReader.take()
        guard reader != nil else { return readerLock.unlock() }
        // It defers too: a message for this loop that came meanwhile (the
        // reply to this very send, on a slow loop) is read by the send its
        // handler makes, with no look of its own, as the reader's would be.
        let outcome = readHoldingLock(limit: LoopNetworkReader.batch, by: reader, deferring: true).outcome
        (consume reader)?.deferredReadMade(on: pollDescriptor, outcome: outcome)
    }

    /// Network thread: makes this socket's owed look if its interval has
    /// passed; false while it stays owed. A socket whose lock is held (a
    /// flood's sender, most often) is left for the next try: the network
    /// thread never makes a sender wait for it.
    func makeOwedLook() -> Bool {
        guard socketLock.tryLock() else { return false }
        defer {
            socket.releaseOwnership()
            socketLock.unlock()
        }
        guard lookOwed else { return true }
        let now = MonotonicClock.now()
        guard now &- lookedAt >= Self.lookInterval else { return false }
        look(at: now)
        return true
    }

    /// A send found no room, socket lock held: the socket is looked at
    /// now, whatever the interval, since the look also processes the
    /// socket's commands (libzmq does so in a send at most once a
    /// millisecond), room made among them. True if there is room now.
    func lookForRoom() -> Bool {
        look(at: MonotonicClock.now()).contains(.pollOut)
    }

    /// Socket lock held.
    @discardableResult
    private func look(at now: UInt64) -> SocketEvents {
        lookedAt = now
        lookOwed = false
        looksMade.wrappingAdd(1, ordering: .relaxed)
        let events = (try? socket.events) ?? []
        if events.contains(.pollIn) { hub.readAgain(self) }
        return events
    }
}
