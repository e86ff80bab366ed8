@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Which loop reads which tcp socket (docs/design.md, "Across machines").
///
/// Each socket is read by one loop's network reader at a time, its
/// *reader*: only that reader's epoll set holds the socket's ZMQ_FD, so a
/// message wakes one loop, not every loop that serves tcp ports (a socket
/// watched by all of them woke them all, and any of them might read the
/// message and pass it on to the right one, a second wake-up). Reading
/// follows the traffic: a reader that handed its last message to a port
/// of another loop gives the socket to that loop's reader, so that a
/// socket whose messages go to one loop is read by that loop. A reader
/// whose loop stays busy (or runs a mode it is not in) while its socket
/// has input is relieved by the network thread within a few tens of
/// milliseconds (`NetworkThread`).
extension NetworkHub {
    /// The sockets `reader` reads now.
    func inbounds(readBy reader: LoopNetworkReader) -> [TCPInbound] {
        state.withLock { state in
            state.inbounds.filter { $0.reader === reader }
        }
    }

    /// A tcp port was scheduled on `loop` in `mode`: the loop reads tcp
    /// sockets in that mode from now on (`LoopNetworkReader`), first those
    /// no loop reads.
    func portScheduled(on loop: RunLoop, forMode mode: RunLoop.Mode) {
        let key = ObjectIdentifier(loop)
        let reader: LoopNetworkReader? = state.withLock { state in
            guard !state.exiting else { return nil }
            if let existing = state.readers[key], existing.loop === loop, existing.source.isValid {
                return existing.modes.insert(mode).inserted ? existing : nil
            }
            if let stale = state.readers[key] { retire(stale, &state) }
            let made = LoopNetworkReader(hub: self, loop: loop)
            made.modes.insert(mode)
            state.readers[key] = made
            activeReaders.wrappingAdd(1, ordering: .releasing)
            for inbound in state.inbounds { assignReader(to: inbound, in: &state) }
            return made
        }
        guard let reader else { return }
        // The network thread looks again at which loops run: another loop
        // reads tcp now (NetworkThread).
        wakeNetworkThread()
        do throws(RunLoopError) { try loop.add(reader.source, forMode: mode) } catch {
            Self.logger.error("tcp: a loop cannot read tcp sockets itself (\(error)); the network thread reads for it")
            state.withLock { state in
                guard state.readers[key] === reader else { return }
                state.readers[key] = nil
                retire(reader, &state)
            }
            return
        }
        // What arrived before the reader watched is read at its first pass.
        reader.signal()
    }

    /// Readers whose loop is gone, dropped; their sockets go to others.
    /// Any thread: the network thread at its housekeeping, and tests.
    func pruneReaders() {
        state.withLock { state in
            for (key, reader) in state.readers where reader.loop == nil || !reader.source.isValid {
                state.readers[key] = nil
                retire(reader, &state)
            }
        }
    }

    /// A reader out of service: its source invalidated (it holds the only
    /// other reference), counted out, its sockets given to another reader
    /// (or to the network thread, if none is left). State lock held.
    private func retire(_ reader: LoopNetworkReader, _ state: inout State) {
        reader.source.invalidate()
        activeReaders.wrappingSubtract(1, ordering: .releasing)
        for inbound in state.inbounds where inbound.reader === reader {
            inbound.setReader(nil)
            assignReader(to: inbound, in: &state)?.signal()
        }
        if activeReaders.load(ordering: .acquiring) == 0 { wakeNetworkThread() }
    }

    /// Gives a socket that no live reader reads to one, if there is one
    /// (one whose loop is running if any is; its traffic moves it on), and
    /// returns it. State lock held.
    @discardableResult
    func assignReader(to inbound: TCPInbound, in state: inout State) -> LoopNetworkReader? {
        if let current = inbound.reader, state.readers.values.contains(where: { $0 === current }) { return nil }
        guard inbound.isOpen, let reader = state.readers.values.first(where: \.loopIsRunning) ?? state.readers.values.first else { return nil }
        move(inbound, to: reader)
        return reader
    }

    /// `inbound`'s last message went to a port of `loopID`'s loop: that
    /// loop's reader reads the socket from now on, and is told to read it
    /// now (what is left may have no signal to come). Any thread.
    func moveReading(of inbound: TCPInbound, toLoop loopID: ObjectIdentifier) {
        let moved: LoopNetworkReader? = state.withLock { state in
            guard inbound.isOpen, let reader = state.readers[loopID], inbound.reader !== reader else { return nil }
            move(inbound, to: reader)
            return reader
        }
        moved?.signal()
    }

    /// State lock held.
    private func move(_ inbound: TCPInbound, to reader: LoopNetworkReader) {
        inbound.reader?.unwatch(inbound.pollDescriptor)
        reader.watch(inbound.pollDescriptor)
        inbound.setReader(reader)
        generation.wrappingAdd(1, ordering: .releasing)
    }

    /// `inbound` may have input no signal will announce (a sender took the
    /// signal, or a reader stopped at its batch): its reader is told to
    /// read it, or the network thread when no loop reads it. Any thread.
    func readAgain(_ inbound: TCPInbound) {
        inbound.readRequested.store(true, ordering: .relaxed)
        if let reader = inbound.reader { reader.signal() } else { wakeNetworkThread() }
    }

    /// `source`, a port of `loop`, was handed a message by another thread:
    /// the loop's reader marks it ready there. A loop without a reader (its
    /// port scheduled in no mode it reads) finds the port's queue when the
    /// port is scheduled again.
    func markReady(_ source: SocketSource, on loop: RunLoop) {
        state.withLock { $0.readers[ObjectIdentifier(loop)] }?.markReady(source)
    }
}
