import Glibc
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// One reader as the tap's thread sends to it: its PUSH socket, the names
/// it has been sent, and the records its socket could not take yet, held
/// back for it (docs/tap-format.md, "Transport").
///
/// For a reader in the readers' directory, known to be there while its
/// process lives, the records its socket cannot take are held: while its
/// connection's handshake is under way (the socket sends only over a
/// finished connection, `ZMQ_IMMEDIATE`) and while its queue is full (a
/// reader the scheduler or a debugger kept from reading for a while);
/// neither sent nor dropped, as many as the ring holds, and sent first
/// once its socket takes them. Only what does not fit is dropped, so such
/// a reader loses events only when it falls behind by more than the ring,
/// however short the stall that put it there; once its process is gone,
/// what is held for it is dropped. A reader of an explicit endpoint may
/// never come and has no process to ask after: a batch its socket cannot
/// take is dropped for it until it connects, and held for it, as for a
/// reader in the directory, while it is connected (libzmq's socket
/// monitor says). The program's threads never wait for a reader, nor do
/// other readers.
///
/// Threading: the tap thread's, under `TapPipeline`'s drain lock.
final class TapOutlet {
    let socket: Socket
    /// Names sent on the socket so far (`TapNames.encoded(from:)`).
    var namesSent = 0
    /// The process of a reader in the readers' directory (its socket
    /// file's name says), while it lives; nil for an explicit endpoint's.
    private(set) var readerPID: pid_t?
    /// For a reader of an explicit endpoint: libzmq's events of its
    /// connection, and whether it is connected now.
    private let connectionWatch: SocketMonitor?
    private var connected = false
    /// Records held, back to back as the ring gave them.
    private(set) var held: [UInt8] = []

    /// Records held for one reader at most: what the ring holds.
    static let heldRecordsLimit = 1 << Int(TapPipeline.ringCapacityLog2)

    /// Sends one batch of records (their count given) to the reader;
    /// false when its socket cannot take it now.
    typealias Transmit = (UnsafeRawBufferPointer, Int) -> Bool

    /// A reader in the readers' directory, watched through its process
    /// (nil when its socket file's name gives none: never held for).
    init(_ socket: Socket, readerPID: pid_t?) {
        self.socket = socket
        self.readerPID = readerPID
        connectionWatch = nil
    }

    /// A reader of an explicit endpoint, watched through its connection:
    /// `connectionWatch` was made on `socket` before it connected.
    init(_ socket: Socket, connectionWatch: SocketMonitor) {
        self.socket = socket
        readerPID = nil
        self.connectionWatch = connectionWatch
    }

    /// Closes the socket (what it queued has `linger` to leave) and the
    /// connection's watch: the context's termination at exit waits for
    /// every socket.
    func close(lingerMilliseconds linger: Int32) {
        // Stopped first: an event libzmq sends to a closed monitor leaks.
        if connectionWatch != nil { try? SocketMonitor.stop(monitoring: socket) }
        try? socket.setLinger(milliseconds: linger)
        socket.close()
        connectionWatch?.close()
    }

    /// The number of the first record held (nil when none is): every event
    /// before it has left the tap for this reader.
    var firstHeldNumber: UInt64? {
        held.isEmpty ? nil : held.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)) }
    }

    var heldRecordCount: Int { held.count / TapWireFormat.recordBytes }

    /// Waits for the connection until `deadline` (monotonic nanoseconds):
    /// with `ZMQ_IMMEDIATE`, the socket can send once a connection finished
    /// its handshake.
    func awaitConnection(until deadline: UInt64) {
        while (try? socket.events.contains(.pollOut)) != true && MonotonicClock.now() < deadline { waitForSocketEvent() }
        socket.releaseOwnership()
    }

    /// Passes `records` (whole records) on: after what is held, through
    /// `transmit` as one batch if the socket takes it, else held (or
    /// dropped: see the type's comment). Returns how many records this
    /// dropped for this reader.
    func pass(_ records: UnsafeRawBufferPointer, batchRecords: Int, _ transmit: Transmit) -> Int {
        let dropped = sendHeld(batchRecords: batchRecords, transmit)
        let count = records.count / TapWireFormat.recordBytes
        if held.isEmpty && transmit(records, count) { return dropped }
        return dropped + (readerLives ? hold(records) : count)
    }

    /// Sends what is held, a batch's worth at a time, as long as the socket
    /// takes it; drops it if the reader's process is gone. Returns how many
    /// records this dropped.
    @discardableResult
    func sendHeld(batchRecords: Int, _ transmit: Transmit) -> Int {
        guard !held.isEmpty else { return 0 }
        let recordBytes = TapWireFormat.recordBytes
        let sent = held.withUnsafeBytes { all in
            var offset = 0
            while offset < all.count {
                let bytes = min(batchRecords * recordBytes, all.count - offset)
                guard transmit(UnsafeRawBufferPointer(rebasing: all[offset..<offset + bytes]), bytes / recordBytes) else { break }
                offset += bytes
            }
            return offset
        }
        held.removeFirst(sent)
        return held.isEmpty || readerLives ? 0 : dropHeld()
    }

    /// At exit: sends what is held as the socket takes it (the reader's
    /// handshake done, its queue read), until `deadline`; returns the
    /// records still held then, dropped.
    func sendHeld(until deadline: UInt64, batchRecords: Int, _ transmit: Transmit) -> Int {
        while !held.isEmpty && MonotonicClock.now() < deadline {
            let dropped = sendHeld(batchRecords: batchRecords, transmit)
            if dropped > 0 { return dropped }
            if !held.isEmpty { waitForSocketEvent() }
        }
        return dropHeld()
    }

    /// Forgets what is held (the reader went, or the exit bound passed);
    /// returns how many records that drops.
    func dropHeld() -> Int {
        defer { held = [] }
        return heldRecordCount
    }

    /// Whether the reader is known to be there: a reader in the readers'
    /// directory whose process lives, a reader of an explicit endpoint
    /// while connected. Asked only when its socket cannot take a batch.
    private var readerLives: Bool {
        if let connectionWatch {
            while let event = try? connectionWatch.next(dontWait: true) {
                switch event.kind {
                case .connected: connected = true
                case .disconnected: connected = false
                default: break
                }
            }
            return connected
        }
        if let pid = readerPID, kill(pid, 0) != 0 && errno == ESRCH { readerPID = nil }
        return readerPID != nil
    }

    /// Holds `records` (whole records) after what is held; returns how many
    /// did not fit and are dropped.
    private func hold(_ records: UnsafeRawBufferPointer) -> Int {
        let recordBytes = TapWireFormat.recordBytes
        let room = max(0, Self.heldRecordsLimit - heldRecordCount)
        let kept = min(room, records.count / recordBytes)
        held += records.prefix(kept * recordBytes)
        return records.count / recordBytes - kept
    }

    /// Up to 10 ms for the socket's state to change (libzmq signals its fd).
    private func waitForSocketEvent() {
        guard var descriptor = (try? socket.fileDescriptor).map({ pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }) else {
            usleep(10_000)
            return
        }
        socket.releaseOwnership()
        _ = poll(&descriptor, 1, 10)
    }
}
