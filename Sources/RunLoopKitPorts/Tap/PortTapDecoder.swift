import FoundationEssentials

/// Reads what a tapped process sends its readers (docs/tap-format.md): one
/// batch per ZeroMQ message, its header and names in the first frame and
/// its fixed-size records in the second, into `PortTapEvent`s.
///
/// A decoder keeps the names each process announced (ports, threads,
/// reasons, the process's own), which come once, ahead of the first record
/// that needs them; use one decoder for everything a reader receives.
/// Malformed input throws a `PortTapFormatError` and changes nothing.
public struct PortTapDecoder: Sendable {
    /// A process's names, by kind and id.
    private struct Names: Sendable {
        var ports: [UInt32: String] = [:]
        var threads: [UInt32: String] = [:]
        var reasons: [UInt32: String] = [:]
        var peers: [UInt32: String] = [:]
        var process: String?
    }

    private struct ProcessKey: Hashable, Sendable {
        let pid: Int32
        let started: UInt64
    }

    private var names: [ProcessKey: Names] = [:]

    /// A decoder that knows no names yet.
    public init() {}

    /// The name of the process `pid` (started at `started`), if it announced one.
    public func processName(pid: Int32, started: UInt64) -> String? {
        names[ProcessKey(pid: pid, started: started)]?.process
    }

    /// Decodes one batch from its two frames.
    public mutating func decode(_ frames: [Data]) throws(PortTapFormatError) -> PortTapBatch {
        guard frames.count == 2 else { throw .frameCount(frames.count) }
        var batch: PortTapBatch?
        var failure: PortTapFormatError?
        frames[0].withUnsafeBytes { header in
            frames[1].withUnsafeBytes { records in
                do throws(PortTapFormatError) { batch = try decode(header: header, records: records) } catch { failure = error }
            }
        }
        if let failure { throw failure }
        return batch!
    }

    /// Decodes one batch: `header` is its first frame, `records` its second.
    public mutating func decode(header: UnsafeRawBufferPointer, records: UnsafeRawBufferPointer) throws(PortTapFormatError) -> PortTapBatch {
        guard header.count >= TapWireFormat.headerBytes else { throw .shortHeader(header.count) }
        guard Self.read(UInt32.self, header, TapWireFormat.Offset.magic) == TapWireFormat.magic else { throw .badMagic }
        let version = Self.read(UInt16.self, header, TapWireFormat.Offset.version)
        guard version >= TapWireFormat.oldestReadVersion && version <= TapWireFormat.version else { throw .unsupportedVersion(version) }
        let headerSize = Int(Self.read(UInt16.self, header, TapWireFormat.Offset.headerSize))
        guard headerSize >= TapWireFormat.headerBytes, headerSize <= header.count else { throw .badHeaderSize(headerSize) }
        // Larger records (a later minor revision) are read by the fields
        // their version has.
        let recordSize = Int(Self.read(UInt32.self, header, TapWireFormat.Offset.recordSize))
        let knownBytes = TapWireFormat.minimumRecordBytes(version: version)
        guard recordSize >= knownBytes, recordSize <= 4096 else { throw .badRecordSize(recordSize) }
        let recordCount = Int(Self.read(UInt32.self, header, TapWireFormat.Offset.recordCount))
        guard records.count == recordCount * recordSize else { throw .recordCountMismatch(records: recordCount, bytes: records.count) }
        let pid = Int32(bitPattern: Self.read(UInt32.self, header, TapWireFormat.Offset.pid))
        let started = Self.read(UInt64.self, header, TapWireFormat.Offset.started)
        let anchor = Int64(bitPattern: Self.read(UInt64.self, header, TapWireFormat.Offset.realtimeAnchor))
        let key = ProcessKey(pid: pid, started: started)
        var table = names[key] ?? Names()
        let nameCount = Int(Self.read(UInt32.self, header, TapWireFormat.Offset.nameCount))
        try Self.readNames(UnsafeRawBufferPointer(rebasing: header[headerSize...]), count: nameCount, version: version, into: &table)

        var events: [PortTapEvent] = []
        events.reserveCapacity(recordCount)
        for index in 0..<recordCount {
            let record = UnsafeRawBufferPointer(rebasing: records[(index * recordSize)..<(index * recordSize + knownBytes)])
            events.append(try Self.event(record, pid: pid, started: started, anchor: anchor, names: table))
        }
        // The names are kept only once the whole batch has been read.
        names[key] = table
        return PortTapBatch(
            pid: pid, started: started, processName: table.process, realtimeAnchor: anchor,
            produced: Self.read(UInt64.self, header, TapWireFormat.Offset.produced),
            dropped: Self.read(UInt64.self, header, TapWireFormat.Offset.dropped), events: events)
    }

    private static func readNames(
        _ bytes: UnsafeRawBufferPointer, count: Int, version: UInt16, into table: inout Names
    ) throws(PortTapFormatError) {
        var offset = 0
        for _ in 0..<count {
            guard bytes.count - offset >= TapWireFormat.nameEntryBytes else { throw .badName(offset: offset) }
            let kind = bytes[offset]
            let length = Int(read(UInt16.self, bytes, offset + 2))
            let id = read(UInt32.self, bytes, offset + 4)
            let start = offset + TapWireFormat.nameEntryBytes
            guard length <= TapWireFormat.maxNameBytes, bytes.count - start >= length else { throw .badName(offset: offset) }
            let name = String(decoding: bytes[start..<start + length], as: UTF8.self)
            switch TapNames.Kind(rawValue: kind) {
            case .port: table.ports[id] = name
            case .thread: table.threads[id] = name
            case .reason: table.reasons[id] = name
            case .process: table.process = name
            case .remotePeer where version >= 2: table.peers[id] = name
            case .remotePeer, nil: throw .badName(offset: offset)
            }
            offset = start + length
        }
        guard offset == bytes.count else { throw .badName(offset: offset) }
    }

    private static func event(
        _ record: UnsafeRawBufferPointer, pid: Int32, started: UInt64, anchor: Int64, names: Names
    ) throws(PortTapFormatError) -> PortTapEvent {
        guard let recordKind = TapWireFormat.RecordKind(rawValue: record[58]) else { throw .badKind(record[58]) }
        let headLength = Int(record[60])
        guard headLength <= TapWireFormat.headBytes else { throw .badHeadLength(headLength) }
        let flags = record[59]
        let monotonic = Int64(bitPattern: read(UInt64.self, record, 8))
        let trace = read(UInt64.self, record, 16)
        let destination = read(UInt32.self, record, 28)
        let source = read(UInt32.self, record, 32)
        let tid = Int32(bitPattern: read(UInt32.self, record, 36))
        let reason = UInt32(read(UInt16.self, record, 56))
        let kind = recordKind.eventKind
        guard !recordKind.isLoopRecord else { return loopEvent(kind, record, pid: pid, started: started, anchor: anchor, names: names) }
        var event = PortTapEvent(
            kind: kind, seq: read(UInt64.self, record, 0), pid: pid, started: started,
            process: names.process, monotonicTime: monotonic, time: monotonic &+ anchor,
            tid: tid, thread: names.threads[UInt32(bitPattern: tid)] ?? "tid \(tid)",
            destination: portName(destination, names), source: source == 0 ? nil : portName(source, names),
            msgid: read(UInt32.self, record, 24), componentCount: Int(read(UInt16.self, record, 52)),
            portCount: Int(read(UInt16.self, record, 54)), dataBytes: Int(clamping: read(UInt64.self, record, 40)),
            head: Array(record[64..<64 + headLength]), trace: trace == 0 ? nil : trace,
            reason: reason == 0 ? nil : names.reasons[reason] ?? "reason \(reason)",
            inPlace: flags & UInt8(RLKTapFlags.inPlace) != 0,
            destinationPeer: names.peers[destination], sourcePeer: source == 0 ? nil : names.peers[source])
        if record.count >= TapWireFormat.actorCallRecordBytes { event.actorCall = try actorCall(record, names) }
        if record.count >= TapWireFormat.recordBytes { event.w3cTraceID = w3cTraceID(record) }
        return event
    }

    /// The W3C trace id of a message that carried a trace context (version
    /// 4, docs/tap-format.md, "Trace context"): 32 lowercase hex digits, as
    /// traceparent writes it; nil when the 16 bytes are zero.
    private static func w3cTraceID(_ record: UnsafeRawBufferPointer) -> String? {
        let bytes = record[TapWireFormat.w3cTraceIDOffset..<TapWireFormat.w3cTraceIDOffset + 16]
        guard bytes.contains(where: { $0 != 0 }) else { return nil }
        return PortTapEvent.hex(Array(bytes))
    }

    /// A distributed actor's call, reply or cancellation (version 3,
    /// docs/tap-format.md, "Actor calls"); nil for any other message.
    private static func actorCall(_ record: UnsafeRawBufferPointer, _ names: Names) throws(PortTapFormatError) -> PortTapEvent.ActorCall? {
        let role = record[100]
        guard role != 0 else { return nil }
        guard let callRole = PortTapEvent.ActorCall.Role(wireValue: role),
              let outcome = PortTapEvent.ActorCall.Outcome(wireValue: record[101])
        else { throw .badActorCall(role: role, outcome: record[101]) }
        let method = read(UInt32.self, record, 96)
        return PortTapEvent.ActorCall(
            role: callRole, id: read(UInt64.self, record, 80), actor: read(UInt64.self, record, 88),
            method: method == 0 ? nil : names.reasons[method] ?? "label \(method)", outcome: outcome)
    }

    /// A loop record (docs/tap-format.md, "Loop records"): the mode in
    /// `reason`, the duration in `data bytes`, the pass number in `trace`;
    /// a callout's name in `msgid` and its origin in `first data size`,
    /// both names of kind 3.
    private static func loopEvent(
        _ kind: PortTapEvent.Kind, _ record: UnsafeRawBufferPointer, pid: Int32, started: UInt64, anchor: Int64, names: Names
    ) -> PortTapEvent {
        let monotonic = Int64(bitPattern: read(UInt64.self, record, 8))
        let tid = Int32(bitPattern: read(UInt32.self, record, 36))
        func label(_ id: UInt32) -> String? { id == 0 ? nil : names.reasons[id] ?? "label \(id)" }
        var event = PortTapEvent(
            kind: kind, seq: read(UInt64.self, record, 0), pid: pid, started: started, process: names.process,
            monotonicTime: monotonic, time: monotonic &+ anchor, tid: tid,
            thread: names.threads[UInt32(bitPattern: tid)] ?? "tid \(tid)", destination: "", msgid: 0)
        event.duration = Int64(clamping: read(UInt64.self, record, 40))
        event.mode = label(UInt32(read(UInt16.self, record, 56)))
        if kind == .callout {
            event.callout = label(read(UInt32.self, record, 24))
            event.origin = label(read(UInt32.self, record, 48))
        } else {
            event.passNumber = read(UInt64.self, record, 16)
        }
        return event
    }

    /// A port the process never named to this reader (a reader that
    /// reconnected to an explicit endpoint) shows as `port#<id>`.
    private static func portName(_ id: UInt32, _ names: Names) -> String { names.ports[id] ?? "port#\(id)" }

    private static func read<T: FixedWidthInteger>(_: T.Type, _ bytes: UnsafeRawBufferPointer, _ offset: Int) -> T {
        T(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

/// The record flags' values (`rlk_tap_record.flags`), without the C module.
enum RLKTapFlags {
    static let inPlace = 2
}

/// One batch of a tapped process's events, decoded.
public struct PortTapBatch: Sendable {
    /// The process that sent it.
    public var pid: Int32
    /// When it started, in clock ticks since boot.
    public var started: UInt64
    /// Its name, if its tap announced it.
    public var processName: String?
    /// CLOCK_REALTIME minus CLOCK_MONOTONIC in that process, in nanoseconds.
    public var realtimeAnchor: Int64
    /// Events the process had numbered when it sent the batch.
    public var produced: UInt64
    /// Events its tap had dropped by then, for all its readers.
    public var dropped: UInt64
    /// The batch's events, in the order of their numbers.
    public var events: [PortTapEvent]
}

/// What is wrong with bytes that are not a tap batch.
public enum PortTapFormatError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A batch is two frames; this message had another count.
    case frameCount(Int)
    /// The first frame is shorter than a header.
    case shortHeader(Int)
    /// The first frame does not start with "RLKT".
    case badMagic
    /// A version this reader does not read.
    case unsupportedVersion(UInt16)
    /// The header's size is below 64 or past the frame.
    case badHeaderSize(Int)
    /// The record size is below what its version writes (80 bytes, 104
    /// in version 3, 120 from version 4) or implausibly large.
    case badRecordSize(Int)
    /// The second frame is not the header's record count of records.
    case recordCountMismatch(records: Int, bytes: Int)
    /// A name entry is cut short, too long, of an unknown kind, or the
    /// names do not end where the frame does.
    case badName(offset: Int)
    /// A record's kind is not 1 to 7.
    case badKind(UInt8)
    /// A record's head length is over 16.
    case badHeadLength(Int)
    /// A record's actor-call role is not 0 to 3, or its outcome not 0 to 6
    /// (version 3).
    case badActorCall(role: UInt8, outcome: UInt8)

    /// What is wrong, in a sentence.
    public var description: String {
        switch self {
        case let .frameCount(count): "a tap batch has 2 frames, not \(count)"
        case let .shortHeader(count): "a tap batch header has 64 bytes at least, not \(count)"
        case .badMagic: "not a tap batch (no RLKT magic)"
        case let .unsupportedVersion(version): "tap format version \(version); this reader reads version \(TapWireFormat.version)"
        case let .badHeaderSize(size): "bad header size \(size)"
        case let .badRecordSize(size): "bad record size \(size)"
        case let .recordCountMismatch(records, bytes): "\(records) records announced, \(bytes) record bytes"
        case let .badName(offset): "malformed name entry at byte \(offset) of the names"
        case let .badKind(kind): "unknown event kind \(kind)"
        case let .badHeadLength(length): "head length \(length) over 16"
        case let .badActorCall(role, outcome): "unknown actor-call role \(role) or outcome \(outcome)"
        }
    }

    /// The case's name, as the fuzzer's coverage names it.
    package var caseName: String {
        switch self {
        case .frameCount: "frameCount"
        case .shortHeader: "shortHeader"
        case .badMagic: "badMagic"
        case .unsupportedVersion: "unsupportedVersion"
        case .badHeaderSize: "badHeaderSize"
        case .badRecordSize: "badRecordSize"
        case .recordCountMismatch: "recordCountMismatch"
        case .badName: "badName"
        case .badKind: "badKind"
        case .badHeadLength: "badHeadLength"
        case .badActorCall: "badActorCall"
        }
    }
}
