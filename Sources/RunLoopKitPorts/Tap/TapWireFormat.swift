internal import CLinuxSupport

/// The tap's wire format, version 4 (docs/tap-format.md): what a tapped
/// process sends each reader, one ZeroMQ message of two frames per batch.
/// Frame 1: a 64-byte header (the process, its clock's anchor, its counts)
/// and the names the reader has not had yet; frame 2: the batch's records,
/// 120 bytes each, as the senders wrote them into the ring. Little-endian
/// throughout.
enum TapWireFormat {
    /// "RLKT", read as a little-endian UInt32.
    static let magic: UInt32 = 0x544B_4C52
    /// Version 2 added names of kind 5 (a tcp port's remote peer), version
    /// 3 an actor call's fields after a record's first 80 bytes, version 4
    /// a W3C trace id after the first 104; a reader reads all four.
    static let version: UInt16 = 4
    static let oldestReadVersion: UInt16 = 1
    static let headerBytes = 64
    static let recordBytes = Int(RLK_TAP_RECORD_SIZE)
    /// The least record size a batch of `version` declares: versions 1
    /// and 2 wrote 80 bytes, version 3 104.
    static func minimumRecordBytes(version: UInt16) -> Int {
        switch version {
        case ...2: 80
        case 3: actorCallRecordBytes
        default: recordBytes
        }
    }
    /// A record's bytes up to its actor call's fields' end (version 3).
    static let actorCallRecordBytes = 104
    /// Where a record's W3C trace id starts (version 4).
    static let w3cTraceIDOffset = 104
    static let headBytes = Int(RLK_TAP_HEAD_CAPACITY)
    /// A name's bytes at most (longer ones are cut, on a byte boundary).
    static let maxNameBytes = 1024
    /// A name entry's fixed part: kind, 0, length, id.
    static let nameEntryBytes = 8

    /// A record's kind (byte 58 of a record, docs/tap-format.md), written
    /// by the pipeline and the loop tracer, read by the decoder.
    enum RecordKind: UInt8 {
        case send = 1
        case deliver = 2
        case sendFailed = 3
        case messageDropped = 4
        case pass = 5
        case sleep = 6
        case callout = 7

        /// The event a reader sees.
        var eventKind: PortTapEvent.Kind {
            switch self {
            case .send: .send
            case .deliver: .deliver
            case .sendFailed: .sendFailed
            case .messageDropped: .messageDropped
            case .pass: .pass
            case .sleep: .sleep
            case .callout: .callout
            }
        }

        /// A loop's pass, sleep or callout (docs/tap-format.md, "Loop records").
        var isLoopRecord: Bool { rawValue >= RecordKind.pass.rawValue }
    }

    /// Header offsets.
    enum Offset {
        static let magic = 0
        static let version = 4
        static let headerSize = 6
        static let pid = 8
        static let recordSize = 12
        static let started = 16
        static let realtimeAnchor = 24
        static let produced = 32
        static let dropped = 40
        static let recordCount = 48
        static let nameCount = 52
    }

    /// The process's part of every header: who it is and its clock's anchor.
    struct Origin {
        let pid: Int32
        let started: UInt64
        /// CLOCK_REALTIME minus CLOCK_MONOTONIC, in nanoseconds, when the
        /// tap started: added to a record's monotonic time, the wall-clock
        /// time to show.
        let realtimeAnchor: Int64
    }

    /// Frame 1 of a batch: the header, then the encoded names.
    static func headerFrame(
        origin: Origin, produced: UInt64, dropped: UInt64, recordCount: Int, names: ArraySlice<UInt8>, nameCount: Int
    ) -> [UInt8] {
        var frame: [UInt8] = []
        frame.reserveCapacity(headerBytes + names.count)
        appendLittleEndian(magic, to: &frame)
        appendLittleEndian(version, to: &frame)
        appendLittleEndian(UInt16(headerBytes), to: &frame)
        appendLittleEndian(UInt32(bitPattern: origin.pid), to: &frame)
        appendLittleEndian(UInt32(recordBytes), to: &frame)
        appendLittleEndian(origin.started, to: &frame)
        appendLittleEndian(UInt64(bitPattern: origin.realtimeAnchor), to: &frame)
        appendLittleEndian(produced, to: &frame)
        appendLittleEndian(dropped, to: &frame)
        appendLittleEndian(UInt32(recordCount), to: &frame)
        appendLittleEndian(UInt32(nameCount), to: &frame)
        appendLittleEndian(UInt64(0), to: &frame)
        frame += names
        return frame
    }

    static func appendLittleEndian<T: FixedWidthInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
    }
}
