import ZeroMQ

/// One reader as the tap's thread sends to it: its PUSH socket, the names
/// it has been sent, and, for a reader found in the readers' directory
/// whose connection is still in its handshake, the records held back for
/// it (docs/tap-format.md, "Transport").
///
/// A reader's socket file exists only while it listens, so its handshake
/// comes, however late a loaded machine makes it (or a stopped reader, once
/// it runs again): until then its records are neither sent (the socket
/// sends only over a finished connection, `ZMQ_IMMEDIATE`) nor dropped,
/// but held, as many as the ring holds, and sent first once the connection
/// is made. The program's threads never wait for it, nor do other readers.
///
/// Threading: the tap thread's, under `TapPipeline`'s drain lock.
final class TapOutlet {
    let socket: Socket
    /// Names sent on the socket so far (`TapNames.encoded(from:)`).
    var namesSent = 0
    /// Whether the connection was seen made: from then on a send that fails
    /// means a full queue (a reader too slow), and is a drop.
    private(set) var isConnected: Bool
    /// Records held while the handshake is under way, back to back as the
    /// ring gave them.
    private(set) var held: [UInt8] = []

    /// Records held for one reader at most: what the ring holds.
    static let heldRecordsLimit = 1 << Int(TapPipeline.ringCapacityLog2)

    /// `connected: false` for a reader whose handshake may not be done yet.
    init(_ socket: Socket, connected: Bool) {
        self.socket = socket
        self.isConnected = connected
    }

    /// The number of the first record held (nil when none is): every event
    /// before it has left the tap for this reader.
    var firstHeldNumber: UInt64? {
        held.isEmpty ? nil : held.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: 0, as: UInt64.self)) }
    }

    /// Whether the connection is made now. With `ZMQ_IMMEDIATE`, the socket
    /// can send only once a connection finished its handshake; before the
    /// first send, nothing else keeps it from sending.
    func checkConnected() -> Bool {
        guard !isConnected else { return true }
        if (try? socket.events.contains(.pollOut)) == true { isConnected = true }
        socket.releaseOwnership()
        return isConnected
    }

    /// Holds `records` (whole records) for later; returns how many did not
    /// fit and are dropped for this reader.
    func hold(_ records: UnsafeRawBufferPointer) -> Int {
        let recordBytes = TapWireFormat.recordBytes
        let room = Self.heldRecordsLimit - held.count / recordBytes
        let kept = min(room, records.count / recordBytes)
        held += records.prefix(kept * recordBytes)
        return records.count / recordBytes - kept
    }

    /// Hands the held records to `send`, a batch's worth at a time, and
    /// forgets them.
    func releaseHeld(batchRecords: Int, _ send: (UnsafeRawBufferPointer, Int) -> Void) {
        let recordBytes = TapWireFormat.recordBytes
        held.withUnsafeBytes { all in
            var offset = 0
            while offset < all.count {
                let bytes = min(batchRecords * recordBytes, all.count - offset)
                send(UnsafeRawBufferPointer(rebasing: all[offset..<offset + bytes]), bytes / recordBytes)
                offset += bytes
            }
        }
        held = []
    }
}
