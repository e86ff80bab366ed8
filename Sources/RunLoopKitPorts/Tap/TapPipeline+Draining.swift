internal import CLinuxSupport
import FoundationEssentials
import Glibc
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

// The tap thread's side of `TapPipeline`: it takes the ring's records in
// batches and passes them on to every reader (`TapOutlet` holds what a
// reader cannot take yet), keeps the count file, and at exit sends what is
// left within the exit bound.
extension TapPipeline {
    /// Sends what the ring holds to every reader, batch by batch. While
    /// records come, the next drain is 1 ms away (one wake-up for many
    /// events); once the ring is dry, the next record's writer wakes the
    /// thread.
    func drain() {
        guard let ring else { return }
        // Everything that reads the ring's reading position (take, settled,
        // the wake request) under the drain's lock: the exit's final drain,
        // on the exiting thread, may run beside the tap thread's.
        let (tookAny, settled, recordCame, holding) = drainLock.withLock { () -> (Bool, UInt64, Bool, Bool) in
            var tookAny = false
            while true {
                let limit = min(buffer.count, Self.batchRecords)
                let taken = buffer.withUnsafeMutableBufferPointer { rlk_tap_ring_take(ring, $0.baseAddress, limit) }
                guard taken > 0 else { break }
                tookAny = true
                lastTaken = buffer[taken - 1].seq
                send(taken)
                if taken < limit { break }
            }
            let stillHeld = sendHeld()
            var settled = rlk_tap_ring_settled(ring, lastTaken)
            // Records held for a reader have not left the tap yet.
            if let firstHeld = stillHeld { settled = min(settled, firstHeld &- 1) }
            // A record that came as the thread asked would wake nobody.
            let recordCame = !tookAny && rlk_tap_ring_request_wake(ring) != 0
            return (tookAny, settled, recordCame, stillHeld != nil)
        }
        noteSettled(settled)
        // On the tap's thread, once a drain: the totals, never a sender's cost.
        if tookAny, let metrics = PortMetrics.current { metrics.tap(produced: producedCount, dropped: droppedCount) }
        if tookAny || recordCame {
            scheduleDrain(after: Self.drainInterval)
        } else if holding {
            scheduleDrain(after: Self.heldCheckInterval)
        }
    }

    /// The readers the tap sends to now. Under the drain lock.
    private var outlets: [TapOutlet] {
        state.withLock { $0.single.map { [$0] } ?? $0.fanOut.map { Array($0.outlets.values) } ?? [] }
    }

    /// Sends the records held for readers whose socket takes them now (and
    /// drops those of readers gone); returns the number of the first
    /// record still held for any (nil: none is). Under the drain lock.
    private func sendHeld() -> UInt64? {
        var firstHeld: UInt64?
        for outlet in outlets where !outlet.held.isEmpty {
            let dropped = outlet.sendHeld(batchRecords: Self.batchRecords) { transmit($0, count: $1, to: outlet) }
            if dropped > 0 { sendDrops.wrappingAdd(UInt64(dropped), ordering: .relaxed) }
            if let first = outlet.firstHeldNumber { firstHeld = min(firstHeld ?? first, first) }
        }
        return firstHeld
    }

    /// Passes the first `count` records of the buffer on to every reader
    /// (`TapOutlet.pass`): one message each, with the names it has not
    /// had yet.
    private func send(_ count: Int) {
        let readers = outlets
        guard !readers.isEmpty else {
            // No reader: the batch is dropped (and counted) once.
            sendDrops.wrappingAdd(UInt64(count), ordering: .relaxed)
            return
        }
        guard let origin = state.withLock({ $0.origin }) else { return }
        buffer.withUnsafeBytes { all in
            let records = UnsafeRawBufferPointer(rebasing: all.prefix(count * TapWireFormat.recordBytes))
            for outlet in readers {
                let dropped = outlet.pass(records, batchRecords: Self.batchRecords) { transmit($0, count: $1, to: outlet, origin: origin) }
                if dropped > 0 { sendDrops.wrappingAdd(UInt64(dropped), ordering: .relaxed) }
            }
        }
    }

    /// Sends `count` records to one reader as one batch, with the names it
    /// has not had yet; false when its socket cannot take it now.
    private func transmit(_ records: UnsafeRawBufferPointer, count: Int, to outlet: TapOutlet, origin: TapWireFormat.Origin? = nil) -> Bool {
        guard let origin = origin ?? state.withLock({ $0.origin }), let ring else { return false }
        defer { outlet.socket.releaseOwnership() }
        let (names, nameCount) = TapNames.shared.encoded(from: outlet.namesSent)
        let header = TapWireFormat.headerFrame(
            origin: origin, produced: rlk_tap_ring_numbered(ring), dropped: droppedCount, recordCount: count,
            names: names, nameCount: nameCount - outlet.namesSent)
        guard header.withUnsafeBytes({ (try? outlet.socket.send($0, more: true, dontWait: true)) == true }) else { return false }
        // The second frame of a message whose first went is queued whatever the mark.
        _ = try? outlet.socket.send(records)
        outlet.namesSent = nameCount
        return true
    }

    /// A drain `delay` from now, unless one is due already.
    private func scheduleDrain(after delay: TimeInterval) {
        let loop: RunLoop? = state.withLock { state in
            guard !state.drainDue else { return nil }
            state.drainDue = true
            return state.loop
        }
        guard let loop else { return }
        let scheduled = try? loop.perform(afterDelay: delay) { [self] in
            state.withLock { $0.drainDue = false }
            drain()
        }
        if scheduled == nil { state.withLock { $0.drainDue = false } }
    }

    /// Every event numbered up to `settled` has left the tap: the count
    /// file says so within 100 ms.
    private func noteSettled(_ settled: UInt64) {
        let (countFile, writeNow): (TapCountFile?, Bool) = state.withLock { state in
            state.settled = max(state.settled, settled)
            guard state.countFile != nil else { return (nil, false) }
            guard !state.countWriteDue else { return (nil, false) }
            state.countWriteDue = true
            return (state.countFile, true)
        }
        if writeNow, countFile != nil { scheduleCountWrite() }
    }

    /// On the tap thread: the count file is rewritten 100 ms after the
    /// first drain since its last write, so that while events flow it is
    /// written ten times a second at most, and once more after they stop.
    private func scheduleCountWrite() {
        let loop = state.withLock { $0.loop }
        let written = try? loop?.perform(afterDelay: Self.countWriteDelay) { [self] in
            drainLock.withLock {
                let (countFile, settled) = state.withLock { state in
                    state.countWriteDue = false
                    return (state.countFile, state.settled)
                }
                countFile?.write(produced: max(producedCount, settled), settled: settled)
            }
        }
        if written == nil { state.withLock { $0.countWriteDue = false } }
    }

    /// At exit, what is held for a reader is sent as its socket takes it
    /// (its handshake done, its queue read), within the exit bound
    /// (`milliseconds`, what is left of it); past the bound, what is still
    /// held is dropped. Returns what is left of the bound. Under the drain
    /// lock.
    private func sendHeldAtExit(within milliseconds: Int32) -> Int32 {
        let holding = outlets.filter { !$0.held.isEmpty }
        guard !holding.isEmpty else { return milliseconds }
        // What the program produced, for readers to read meanwhile: the
        // tap thread's count writes wait for this wait.
        state.withLock { $0.countFile?.write(produced: producedCount, settled: $0.settled) }
        let deadline = MonotonicClock.now() &+ UInt64(max(0, milliseconds)) &* 1_000_000
        for outlet in holding {
            let dropped = outlet.sendHeld(until: deadline, batchRecords: Self.batchRecords) { transmit($0, count: $1, to: outlet) }
            if dropped > 0 { sendDrops.wrappingAdd(UInt64(dropped), ordering: .relaxed) }
        }
        let left = deadline > MonotonicClock.now() ? deadline - MonotonicClock.now() : 0
        return Int32(left / 1_000_000)
    }

    /// At process exit: sends what the ring still holds, then closes the
    /// sockets so that the outbound context's termination flushes them, for
    /// what is left of the exit bound at most (`lingerMilliseconds`).
    func drainAtExit(lingerMilliseconds: Int32) {
        drain()
        drainLock.withLock {
            let lingerMilliseconds = sendHeldAtExit(within: lingerMilliseconds)
            state.withLock { state in
                state.single?.close(lingerMilliseconds: lingerMilliseconds)
                state.single = nil
                state.fanOut?.closeAll(lingerMilliseconds: lingerMilliseconds)
                // Everything left the tap: the last word, for a reader that reads it later.
                let produced = producedCount
                state.countFile?.write(produced: produced, settled: produced, exited: true)
                // And the last: a count write the tap thread had scheduled,
                // which waited for the drain lock, writes nothing after it.
                state.countFile = nil
            }
        }
    }
}
