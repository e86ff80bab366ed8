internal import CLinuxSupport
import FoundationEssentials
import Glibc
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Carries tap events from the threads that send and receive to the
/// readers. A sender writes one fixed-size record into a lock-free ring
/// (`rlk_tap_ring`): ids and numbers only, no allocation, no String, no
/// lock (names are announced once, by `TapNames`). The `rlk-tap` loop
/// thread takes the records in batches, at most once a millisecond while
/// events flow (woken by the first record after the ring ran dry), and
/// sends each batch to each reader as one ZeroMQ message (docs/tap-format.md),
/// never blocking. Whatever cannot go on (ring full, no reader, a reader too
/// slow) is dropped and counted, and readers see it as gaps in the numbers.
final class TapPipeline: @unchecked Sendable {
    // @unchecked Sendable: what changes is in `state` (behind its lock),
    // atomic, or the tap thread's (`outlets`, `buffer`: under `drainLock`).
    static let shared = TapPipeline()

    /// Events the ring holds (2^14 of 120 bytes, about 1.9 MiB): beyond, they are dropped.
    /// About 90 ms of pingpong's flat-out traffic, for a tap thread that
    /// the scheduler keeps waiting. Not more: a ring past the L2 cache makes
    /// every event dearer (docs/performance.md, "The tap").
    static let ringCapacityLog2: UInt32 = 14
    /// Records in one batch at most: 320 KiB. (Tests that overload a
    /// reader set it, and the mark below, low before the tap starts, so that
    /// the reader's queue is full after a few hundred events whatever the
    /// machine's speed; nothing else changes them.)
    nonisolated(unsafe) static var batchRecords = 4096
    /// Batches libzmq queues towards a reader before sends fail (and count
    /// as drops): 64 ms of traffic at one batch a millisecond, and at most
    /// 20 MiB of full batches, per reader.
    nonisolated(unsafe) static var socketHighWaterMark: Int32 = 64
    /// How long the tap thread lets records gather while they flow.
    static let drainInterval: TimeInterval = 0.001

    /// How often the tap thread looks again at a reader still in its
    /// handshake, while it holds records for it and none come.
    static let heldCheckInterval: TimeInterval = 0.01

    private struct State {
        var countFile: TapCountFile?
        var countWriteDue = false
        /// Every event numbered up to this one has left the tap (passed on
        /// or dropped): what the count file says besides the events produced.
        var settled: UInt64 = 0
        var drainDue = false
        // Set once by start; the sockets are used on the tap thread (and at exit).
        var thread: LoopThread?
        var loop: RunLoop?
        /// The one reader of an explicit endpoint.
        var single: TapOutlet?
        /// Or every reader in the readers' directory (the default).
        var fanOut: TapFanOut?
        var drainSource: CustomSource?
        var watchSource: SocketSource?
        var origin: TapWireFormat.Origin?
    }

    private let state = Locked(State())
    /// The ring, once started: its address (0 before).
    private let ringAddress = Atomic<UInt>(0)
    /// Leading bytes of the first data component a record carries.
    private let headBytes = Atomic<Int>(16)
    /// Events lost on the way to a reader (no reader, a reader's socket
    /// full: once per reader); the ring's own drops are counted there.
    private let sendDrops = Atomic<UInt64>(0)
    /// Serialises the tap thread's drains and the last drain at exit.
    private let drainLock = Lock()
    /// The drain's buffer of records (under `drainLock`).
    private var buffer = [rlk_tap_record](repeating: rlk_tap_record(), count: TapPipeline.batchRecords)
    /// The number of the last record taken (under `drainLock`).
    private var lastTaken: UInt64 = 0
    /// The tap thread's loop, by identity (0 before start), which the loop
    /// tracer leaves out.
    private let tapLoopIdentity = Atomic<UInt>(0)

    /// Whether `loop` is the tap thread's own.
    func isTapLoop(_ loop: RunLoop) -> Bool {
        tapLoopIdentity.load(ordering: .relaxed) == UInt(bitPattern: ObjectIdentifier(loop))
    }

    private var ring: OpaquePointer? { OpaquePointer(bitPattern: ringAddress.load(ordering: .acquiring)) }

    /// Events dropped so far: by the ring, and on the way to readers.
    var droppedCount: UInt64 {
        sendDrops.load(ordering: .relaxed) + (ring.map { rlk_tap_ring_dropped($0) } ?? 0)
    }

    /// Events produced so far, passed on or dropped: the last event's number.
    var producedCount: UInt64 { ring.map { rlk_tap_ring_numbered($0) } ?? 0 }

    /// The readers the tap reports to now (the readers' directory's, or 1
    /// for an explicit endpoint).
    var readerCount: Int {
        drainLock.withLock { state.withLock { $0.single != nil ? 1 : $0.fanOut?.outlets.count ?? 0 } }
    }

    /// Starts the tap thread. With an endpoint, the tap reports to that
    /// one reader; with none, to every reader in the readers' directory
    /// (`TapFanOut`), as many as come and go.
    func start(endpoint: String?, dataBytes: Int) throws(PortError) {
        // Resolved first: the runtime directory's checks may throw.
        let readersDirectory = endpoint == nil ? try TapFanOut.directoryPath() : nil
        try state.withLock { (state) throws(PortError) -> Void in
            headBytes.store(min(dataBytes, TapWireFormat.headBytes), ordering: .relaxed)
            guard state.thread == nil else { return }
            guard let made = rlk_tap_ring_create(Self.ringCapacityLog2) else { throw .systemCall(SystemCallError(call: "posix_memalign (the tap's ring)", errno: ENOMEM)) }
            let thread = LoopThread(name: "rlk-tap")
            do throws(RunLoopError) { try thread.start() } catch { throw .runLoop(error) }
            let identity = ProcessIdentity.current
            state.origin = TapWireFormat.Origin(
                pid: identity.pid, started: identity.startTime,
                realtimeAnchor: rlk_realtime_nanoseconds() &- Int64(bitPattern: rlk_monotonic_nanoseconds()))
            TapNames.shared.announceProcess(TapNames.processName, pid: identity.pid)
            // An ipc tap uses the outbound context, which is flushed at
            // exit, so that a process's last events reach the reader.
            let crossProcess = !(endpoint?.hasPrefix("inproc://") ?? false)
            let context = crossProcess ? OutboundFlush.shared.context : ZMQContext.shared
            let linger = crossProcess ? SendChannel.lingerMilliseconds : 0
            do throws(ZMQError) {
                if let endpoint {
                    let push = try context.makeSocket(.push)
                    try Self.configure(push, lingerMilliseconds: linger)
                    try push.connect(endpoint)
                    push.releaseOwnership()
                    state.single = TapOutlet(push, connected: true)
                } else if let readersDirectory {
                    let fanOut = TapFanOut(directory: readersDirectory, context: context, lingerMilliseconds: linger)
                    if let watch = fanOut.startWatching() {
                        let source = SocketSource(fileDescriptor: watch) { [self] _, _ in
                            let dropped = drainLock.withLock { fanOut.directoryChanged() }
                            if dropped > 0 { sendDrops.wrappingAdd(UInt64(dropped), ordering: .relaxed) }
                        }
                        do throws(RunLoopError) { try thread.runLoop?.add(source, forMode: .common) } catch {}
                        state.watchSource = source
                    }
                    _ = fanOut.refresh()  // nothing held yet
                    state.fanOut = fanOut
                    if let directory = try? PortTap.countsDirectory() {
                        let countFile = TapCountFile(directory: directory)
                        countFile.sweep()
                        countFile.write(produced: 0, settled: 0)
                        state.countFile = countFile
                    }
                }
            } catch {
                thread.stop()
                throw .zeroMQ(error)
            }
            if let socket = state.single?.socket { Self.awaitConnection(socket) }
            if crossProcess { OutboundFlush.shared.atExit { TapPipeline.shared.drainAtExit(lingerMilliseconds: $0) } }
            let source = CustomSource { [self] in drain() }
            thread.runLoop?.add(source, forMode: .common)
            state.drainSource = source
            state.loop = thread.runLoop
            if let loop = thread.runLoop { tapLoopIdentity.store(UInt(bitPattern: ObjectIdentifier(loop)), ordering: .relaxed) }
            state.thread = thread
            ringAddress.store(UInt(bitPattern: Int(bitPattern: UnsafeMutableRawPointer(made))), ordering: .releasing)
        }
    }

    /// Waits up to the connection bound (`Port.connectionBound`, as a
    /// port's handshake with a live peer) for `push` to reach the reader of
    /// an explicit endpoint, so that the events that follow are not dropped
    /// for want of a connection (with ZMQ_IMMEDIATE, pollOut means
    /// connected). Readers in the readers' directory are not waited for:
    /// their records are held until their handshake is done (`TapOutlet`).
    static func awaitConnection(_ push: Socket) {
        let deadline = MonotonicClock.now() &+ Port.connectionBoundNanoseconds
        while (try? push.events.contains(.pollOut)) != true && MonotonicClock.now() < deadline {
            guard var descriptor = (try? push.fileDescriptor).map({ pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }) else { break }
            _ = poll(&descriptor, 1, 10)
        }
        push.releaseOwnership()
    }

    /// How every tap socket is set up: no reader yet means sends fail at
    /// once (and count as drops) instead of queueing for a reader that
    /// may never come; a bounded queue towards it; the exit's linger.
    static func configure(_ push: Socket, lingerMilliseconds: Int32) throws(ZMQError) {
        try push.setImmediate(true)
        try push.setSendHighWaterMark(socketHighWaterMark)
        try push.setLinger(milliseconds: lingerMilliseconds)
    }

    // MARK: - Recording (any thread)

    /// The record every event starts from: its kind, time, thread and
    /// destination.
    @inline(__always)
    private func record(_ kind: TapWireFormat.RecordKind, destination: Port, msgid: UInt32, time: Int64) -> rlk_tap_record {
        var record = rlk_tap_record()
        record.kind = kind.rawValue
        record.monotonic_ns = time
        record.msgid = msgid
        record.destination = TapNames.shared.id(of: destination)
        record.tid = TapNames.shared.currentThread()
        return record
    }

    /// Numbers the record and puts it in the ring (or counts it dropped),
    /// waking the tap thread if it asked to be.
    @inline(__always)
    private func put(_ record: inout rlk_tap_record) {
        guard let ring else { return }
        var wake: Int32 = 0
        _ = rlk_tap_ring_put(ring, &record, &wake)
        if wake != 0 { wakeTapThread() }
    }

    private func wakeTapThread() {
        let (loop, source) = state.withLock { ($0.loop, $0.drainSource) }
        source?.signal()
        loop?.wakeUp()
    }

    /// A send, or a send that failed (`reason`).
    func recordSend(
        to destination: Port, msgid: UInt32, components: [PortMessage.Component], replyPort: Port?,
        traceID: UInt64?, time: Int64, reason: String? = nil, w3cTraceID: TapW3CTraceID
    ) {
        var record = record(reason == nil ? .send : .sendFailed, destination: destination, msgid: msgid, time: time)
        rlk_tap_call_apply(&record)
        record.describe(components, headBytes: headBytes.load(ordering: .relaxed))
        if let replyPort { record.source = TapNames.shared.id(of: replyPort) }
        record.trace = traceID ?? 0
        if let reason { record.reason = TapNames.shared.reasonID(reason) }
        record.note(w3cTraceID)
        put(&record)
    }

    /// A send of one data component given as bytes.
    func recordSend(
        to destination: Port, msgid: UInt32, bytes: UnsafeRawBufferPointer, replyPort: Port?, traceID: UInt64, time: Int64,
        w3cTraceID: TapW3CTraceID
    ) {
        var record = record(.send, destination: destination, msgid: msgid, time: time)
        record.components = 1
        record.describeData(bytes, first: true, headBytes: headBytes.load(ordering: .relaxed))
        if let replyPort { record.source = TapNames.shared.id(of: replyPort) }
        record.trace = traceID
        record.note(w3cTraceID)
        put(&record)
    }

    /// A delivery to a handler of `PortMessage`s; `call` says what it is
    /// to a distributed actor system.
    func recordDelivery(_ message: PortMessage, on port: Port, traceID: UInt64?, call: rlk_tap_call?) {
        var record = record(.deliver, destination: port, msgid: message.msgid, time: Int64(bitPattern: rlk_monotonic_nanoseconds()))
        if let call { record.note(call) }
        record.describe(message.components, headBytes: headBytes.load(ordering: .relaxed))
        if let reply = message.replyPort { record.source = TapNames.shared.id(of: reply) }
        record.trace = traceID ?? 0
        if let context = message.traceContext { record.note(TapW3CTraceID(context)) }
        put(&record)
    }

    /// A delivery read in place: described from the view, nothing copied.
    func recordDelivery(_ view: borrowing PortMessageView, on port: Port, traceID: UInt64?) {
        var record = record(.deliver, destination: port, msgid: view.msgid, time: Int64(bitPattern: rlk_monotonic_nanoseconds()))
        record.flags |= UInt8(RLK_TAP_FLAG_IN_PLACE)
        record.describe(view, headBytes: headBytes.load(ordering: .relaxed))
        if let reply = view.replyPort { record.source = TapNames.shared.id(of: reply) }
        record.trace = traceID ?? 0
        if let context = view.traceContext { record.note(TapW3CTraceID(context)) }
        put(&record)
    }

    /// A loop's pass, sleep or callout, from the loop tracer
    /// (docs/tap-format.md, "Loop records"): on the loop's thread.
    func recordLoop(
        kind: TapWireFormat.RecordKind, start: UInt64, duration: UInt64, mode: UInt16, number: UInt64, label: UInt16, detail: UInt32,
        handledSource: Bool
    ) {
        var record = rlk_tap_record()
        record.kind = kind.rawValue
        record.monotonic_ns = Int64(bitPattern: start)
        record.data_bytes = duration
        record.reason = mode
        record.trace = number
        record.msgid = UInt32(label)
        record.first_data_size = detail
        if handledSource { record.flags |= UInt8(RLK_TAP_FLAG_HANDLED_SOURCE) }
        record.tid = TapNames.shared.currentThread()
        put(&record)
    }

    /// A message a port dropped on receipt.
    func recordDrop(on port: Port, msgid: UInt32, reason: String) {
        var record = record(.messageDropped, destination: port, msgid: msgid, time: Int64(bitPattern: rlk_monotonic_nanoseconds()))
        record.reason = TapNames.shared.reasonID(reason)
        put(&record)
    }

    // MARK: - Draining (the tap thread)

    /// Sends what the ring holds to every reader, batch by batch. While
    /// records come, the next drain is 1 ms away (one wake-up for many
    /// events); once the ring is dry, the next record's writer wakes the
    /// thread.
    private func drain() {
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
            let stillHeld = sendHeldToConnectedReaders()
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

    /// Sends the records held for readers whose handshake is now done;
    /// returns the number of the first record still held for any (nil:
    /// none is). Under the drain lock.
    private func sendHeldToConnectedReaders() -> UInt64? {
        guard let fanOut = state.withLock({ $0.fanOut }) else { return nil }
        var firstHeld: UInt64?
        for outlet in fanOut.outlets.values where !outlet.held.isEmpty {
            if outlet.checkConnected() {
                outlet.releaseHeld(batchRecords: Self.batchRecords) { records, count in transmit(records, count: count, to: outlet) }
            } else if let first = outlet.firstHeldNumber {
                firstHeld = min(firstHeld ?? first, first)
            }
        }
        return firstHeld
    }

    /// Sends the first `count` records of the buffer to every reader: one
    /// message each, with the names it has not had yet.
    private func send(_ count: Int) {
        let (single, fanOut, origin) = state.withLock { ($0.single, $0.fanOut, $0.origin) }
        guard let origin else { return }
        let outlets = single.map { [$0] } ?? fanOut.map { Array($0.outlets.values) } ?? []
        guard !outlets.isEmpty else {
            // No reader: the batch is dropped (and counted) once.
            sendDrops.wrappingAdd(UInt64(count), ordering: .relaxed)
            return
        }
        buffer.withUnsafeBytes { all in
            let records = UnsafeRawBufferPointer(rebasing: all.prefix(count * TapWireFormat.recordBytes))
            for outlet in outlets {
                guard outlet.checkConnected() else {
                    // In its handshake: held, after what it holds already.
                    let overflow = outlet.hold(records)
                    if overflow > 0 { sendDrops.wrappingAdd(UInt64(overflow), ordering: .relaxed) }
                    continue
                }
                if !outlet.held.isEmpty {
                    outlet.releaseHeld(batchRecords: Self.batchRecords) { held, heldCount in transmit(held, count: heldCount, to: outlet, origin: origin) }
                }
                transmit(records, count: count, to: outlet, origin: origin)
            }
        }
    }

    /// Sends `count` records to one reader as one batch, with the names it
    /// has not had yet; a batch its socket cannot take now is dropped for it.
    private func transmit(_ records: UnsafeRawBufferPointer, count: Int, to outlet: TapOutlet, origin: TapWireFormat.Origin? = nil) {
        guard let origin = origin ?? state.withLock({ $0.origin }), let ring else { return }
        let (names, nameCount) = TapNames.shared.encoded(from: outlet.namesSent)
        let header = TapWireFormat.headerFrame(
            origin: origin, produced: rlk_tap_ring_numbered(ring), dropped: droppedCount, recordCount: count,
            names: names, nameCount: nameCount - outlet.namesSent)
        let sent = header.withUnsafeBytes { (try? outlet.socket.send($0, more: true, dontWait: true)) == true }
        if sent {
            // The second frame of a message whose first went is queued whatever the mark.
            _ = try? outlet.socket.send(records)
            outlet.namesSent = nameCount
        } else {
            sendDrops.wrappingAdd(UInt64(count), ordering: .relaxed)
        }
        outlet.socket.releaseOwnership()
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

    static let countWriteDelay: TimeInterval = 0.1

    /// At exit, a reader still in its handshake is waited for, within the
    /// exit bound (`milliseconds`, what is left of it), and sent what was
    /// held for it; past the bound, what it still holds is dropped. Under
    /// the drain lock.
    private func sendHeldAtExit(within milliseconds: Int32) {
        guard let fanOut = state.withLock({ $0.fanOut }), fanOut.outlets.values.contains(where: { !$0.held.isEmpty }) else { return }
        // What the program produced, for readers to read meanwhile: the
        // tap thread's count writes wait for this wait.
        state.withLock { $0.countFile?.write(produced: producedCount, settled: $0.settled) }
        let deadline = MonotonicClock.now() &+ UInt64(max(0, milliseconds)) &* 1_000_000
        for outlet in fanOut.outlets.values where !outlet.held.isEmpty {
            while !outlet.checkConnected() && MonotonicClock.now() < deadline {
                guard var descriptor = (try? outlet.socket.fileDescriptor).map({ pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }) else { break }
                outlet.socket.releaseOwnership()
                _ = poll(&descriptor, 1, 10)
            }
            if outlet.isConnected {
                outlet.releaseHeld(batchRecords: Self.batchRecords) { records, count in transmit(records, count: count, to: outlet) }
            } else {
                sendDrops.wrappingAdd(UInt64(outlet.held.count / TapWireFormat.recordBytes), ordering: .relaxed)
            }
        }
    }

    /// At process exit: sends what the ring still holds, then closes the
    /// sockets so that the outbound context's termination flushes them, for
    /// what is left of the exit bound at most (`lingerMilliseconds`).
    private func drainAtExit(lingerMilliseconds: Int32) {
        drain()
        drainLock.withLock {
            sendHeldAtExit(within: lingerMilliseconds)
            state.withLock { state in
                if let single = state.single {
                    try? single.socket.setLinger(milliseconds: lingerMilliseconds)
                    single.socket.close()
                }
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
