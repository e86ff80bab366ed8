/// The soak's traffic, one data component of 24 bytes (little-endian):
/// the sender, the stream, and a number. Both ways of sending
/// (`send(msgid:bytes:)` and `send(msgid:components:)`) write the same bytes.
struct TrafficMessage {
    enum Kind: UInt32 {
        /// `number` is the message's sequence number in its stream, from 0.
        case data = 1
        /// The sender closes the stream: `number` is how many it sent.
        case endOfStream = 2
        /// Makes a port's send channel exist before a resource sample (see
        /// Checkpoint); not part of any stream.
        case probe = 3
    }

    static let byteCount = 24

    var senderID: UInt64
    var streamID: UInt64
    var number: UInt64

    init(senderID: UInt64, streamID: UInt64, number: UInt64) {
        self.senderID = senderID
        self.streamID = streamID
        self.number = number
    }

    /// Nil unless `bytes` is exactly one encoded message.
    init?(bytes: UnsafeRawBufferPointer) {
        guard bytes.count == Self.byteCount else { return nil }
        senderID = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self))
        streamID = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        number = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
    }

    func withBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        var fields = (senderID.littleEndian, streamID.littleEndian, number.littleEndian)
        return try withUnsafeBytes(of: &fields) { try body($0) }
    }

    var key: StreamKey { StreamKey(senderID: senderID, streamID: streamID) }
}

/// A stream: one sender (a worker thread) to one receiving port.
struct StreamKey: Hashable, Codable, Sendable {
    var senderID: UInt64
    var streamID: UInt64
}
