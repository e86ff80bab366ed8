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
/// never blocking: what the socket of a reader in the readers' directory
/// cannot take yet is held for it (`TapOutlet`). Whatever cannot go on
/// (ring full, no reader, a reader behind by more than the ring) is dropped
/// and counted, and readers see it as gaps in the numbers.
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
    /// Batches libzmq queues towards a reader before sends fail (and the
    /// tap holds records for it, or drops them for a reader of an explicit
    /// endpoint: `TapOutlet`): 64 ms of traffic at one batch a millisecond,
    /// and at most 20 MiB of full batches, per reader.
    nonisolated(unsafe) static var socketHighWaterMark: Int32 = 64
    /// How long the tap thread lets records gather while they flow.
    static let drainInterval: TimeInterval = 0.001

    /// How often the tap thread looks again at a reader it holds records
    /// for (in its handshake, or its queue full), while none come.
    static let heldCheckInterval: TimeInterval = 0.01
    /// How long after a drain the count file is written: ten times a
    /// second at most while events flow.
    static let countWriteDelay: TimeInterval = 0.1

    struct State {
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

    let state = Locked(State())
    /// The ring, once started: its address (0 before).
    private let ringAddress = Atomic<UInt>(0)
    /// Leading bytes of the first data component a record carries.
    private let headBytes = Atomic<Int>(16)
    /// Events lost on the way to a reader (no reader; a batch a reader's
    /// socket could not take and the tap could not hold for it: once per
    /// reader); the ring's own drops are counted there.
    let sendDrops = Atomic<UInt64>(0)
    /// Serialises the tap thread's drains and the last drain at exit.
    let drainLock = Lock()
    /// The drain's buffer of records (under `drainLock`).
    var buffer = [rlk_tap_record](repeating: rlk_tap_record(), count: TapPipeline.batchRecords)
    /// The number of the last record taken (under `drainLock`).
    var lastTaken: UInt64 = 0
    /// The tap thread's loop, by identity (0 before start), which the loop
    /// tracer leaves out.
    private let tapLoopIdentity = Atomic<UInt>(0)

    /// Whether `loop` is the tap thread's own.
    func isTapLoop(_ loop: RunLoop) -> Bool {
        tapLoopIdentity.load(ordering: .relaxed) == UInt(bitPattern: ObjectIdentifier(loop))
    }

    var ring: OpaquePointer? { OpaquePointer(bitPattern: ringAddress.load(ordering: .acquiring)) }

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
                    // Watched from before it connects: a quick handshake's
                    // events would be lost otherwise. Two kinds only: the
                    // watch is read when a batch does not fit, and libzmq
                    // would queue a retry's events every 100 ms meanwhile.
                    let watch = try SocketMonitor(watching: push, in: context, only: [.connected, .disconnected])
                    try push.connect(endpoint)
                    push.releaseOwnership()
                    state.single = TapOutlet(push, connectionWatch: watch)
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
            // A reader of an explicit endpoint may never come: it is waited
            // for here, as a port's peer; at exit only once connected.
            state.single?.awaitConnection(until: MonotonicClock.now() &+ Port.connectionBoundNanoseconds)
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

    /// How every tap socket is set up: no reader yet means sends fail at
    /// once (the tap holds the records) instead of queueing in libzmq for
    /// a reader that may never come; a bounded queue towards it; the
    /// exit's linger.
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
}
