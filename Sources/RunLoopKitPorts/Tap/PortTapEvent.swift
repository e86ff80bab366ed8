/// One event of the port traffic tap: a message sent or delivered, a send
/// that failed, a message dropped on receipt, as `PortTapDecoder` reads it
/// from the tap's records and `portsniff` shows and records it.
///
/// Encoded (`Codable`) as the JSON Lines record of `portsniff --json` and
/// `--write` (docs/tap-format.md, "Recordings"): keys in snake case, with
/// the unit in the name of every field that has one.
public struct PortTapEvent: Codable, Sendable, Hashable {
    /// What happened; encoded as "send", "deliver", "sendFailed",
    /// "messageDropped", and for loop tracing (`PortTap.traceLoops()`)
    /// "pass", "sleep" and "callout".
    public enum Kind: String, Codable, Sendable, CaseIterable {
        /// A thread sent the message (reported by the sender's process).
        case send
        /// A port's handler received it (reported by the receiver's process).
        case deliver
        /// A send threw: nothing was sent (`reason` names the `PortError`).
        case sendFailed
        /// A local port dropped a message on receipt instead of delivering
        /// it: it had no handler, or the message was malformed (`reason`
        /// names the `PortDropReason`; a malformed message's msgid is 0).
        case messageDropped
        /// A pass of a loop (loop tracing): `duration`, `mode`, `passNumber`.
        case pass
        /// The loop slept in a pass (loop tracing): `duration`, `mode`.
        case sleep
        /// A loop called out (loop tracing): `callout` names what ran (a
        /// timer, a source, a block, a job, the main queue, an observer),
        /// `origin` the block's tag and call site; `duration`, `mode`.
        case callout
    }

    /// What happened.
    public var kind: Kind
    /// The event's number in its process, from 1, one for every event the
    /// tap produced, passed on or dropped (S-TAP-1): a reader that finds a
    /// gap between two numbers of one process knows exactly how many it
    /// missed.
    public var seq: UInt64
    /// The process that reported the event.
    public var pid: Int32
    /// When the process started, in clock ticks since the machine booted
    /// (field 22 of `/proc/<pid>/stat`): with `pid`, it names the process
    /// even after its pid is reused.
    public var started: UInt64
    /// The process's name (the basename of its argv[0], as `ps` shows it),
    /// if its tap announced it.
    public var process: String?
    /// CLOCK_MONOTONIC when it happened, in nanoseconds: what readers order
    /// events by and measure latency with (one clock for every process on
    /// the machine).
    public var monotonicTime: Int64
    /// The same instant on the wall clock, in nanoseconds since 1970: the
    /// monotonic time plus the process's anchor (the difference of the two
    /// clocks when its tap started), for display.
    public var time: Int64
    /// The kernel thread id of the thread that sent, or on whose loop the
    /// message was delivered.
    public var tid: Int32
    /// That thread's name: its loop's name, its OS-level name, `main`, or
    /// `dispatch-<qos>` for libdispatch's workers.
    public var thread: String
    /// The port the message was sent to (or that dropped it); empty for loop tracing's events.
    public var destination: String
    /// The port the message came from: its reply port, if it had one.
    public var source: String?
    /// The message's msgid.
    public var msgid: UInt32
    /// Its components.
    public var componentCount: Int
    /// How many of them are ports.
    public var portCount: Int
    /// Bytes of all its data components.
    public var dataBytes: Int
    /// The leading bytes of its first data component (as many as the tap
    /// keeps: `RUNLOOPKIT_TAP_BYTES`, at most 16).
    public var head: [UInt8]
    /// Pairs a send with its delivery; the same in both events.
    public var trace: UInt64?
    /// Why a send failed (`sendFailed`: the `PortError`'s case, such as
    /// `invalidPort`) or a message was dropped (`messageDropped`: the
    /// `PortDropReason` as logs name it, such as `no message handler`).
    public var reason: String?
    /// A delivery read in place (`PortMessageView`).
    public var inPlace: Bool
    /// Loop tracing: how long the pass, sleep or callout lasted, in nanoseconds.
    public var duration: Int64?
    /// Loop tracing: the mode the loop ran.
    public var mode: String?
    /// Loop tracing: what a callout ran (`RunLoop.CalloutKind`'s description).
    public var callout: String?
    /// Loop tracing: a block's tag and call site (`RunLoop.CalloutOrigin`).
    public var origin: String?
    /// Loop tracing: the pass's number on its loop.
    public var passNumber: UInt64?
    /// Set by a reader that paired this delivery with its send: the time
    /// between the two, in nanoseconds.
    public var latency: Int64?
    /// Set by a reader whose reorder window this event missed: it is shown
    /// after events later than it.
    public var late: Bool?
    /// For a port reached over tcp, its remote peer: the endpoint (or
    /// "connecting only") and the process's instance (tap format 2).
    public var destinationPeer: String?
    /// The reply port's remote peer, as `destinationPeer`.
    public var sourcePeer: String?
    /// A distributed actor's call, reply or cancellation: what it is, the
    /// call's id, the actor, the method (tap format 3); nil for any other
    /// message.
    public var actorCall: ActorCall?

    /// The W3C trace id of the trace the message was sent in, when it
    /// carried a trace context (`PortMessage.traceContext`): 32 lowercase
    /// hex digits, as `traceparent` and tracers show it (tap format 4). Not
    /// `trace`, which pairs a send with its delivery.
    public var w3cTraceID: String?

    /// An event with every field given; `PortTapDecoder` makes these.
    public init(
        kind: Kind, seq: UInt64, pid: Int32, started: UInt64, process: String? = nil,
        monotonicTime: Int64, time: Int64, tid: Int32, thread: String,
        destination: String, source: String? = nil, msgid: UInt32,
        componentCount: Int = 0, portCount: Int = 0, dataBytes: Int = 0, head: [UInt8] = [],
        trace: UInt64? = nil, reason: String? = nil, inPlace: Bool = false,
        destinationPeer: String? = nil, sourcePeer: String? = nil
    ) {
        self.destinationPeer = destinationPeer
        self.sourcePeer = sourcePeer
        self.kind = kind
        self.seq = seq
        self.pid = pid
        self.started = started
        self.process = process
        self.monotonicTime = monotonicTime
        self.time = time
        self.tid = tid
        self.thread = thread
        self.destination = destination
        self.source = source
        self.msgid = msgid
        self.componentCount = componentCount
        self.portCount = portCount
        self.dataBytes = dataBytes
        self.head = head
        self.trace = trace
        self.reason = reason
        self.inPlace = inPlace
    }

    /// The recording format's version, in every record (`version`).
    public static let recordVersion = 1

    private enum CodingKeys: String, CodingKey {
        case version, kind, seq, pid
        case started = "started_ticks"
        case process
        case monotonicTime = "time_monotonic_ns"
        case time = "time_unix_ns"
        case tid, thread
        case destination, source, msgid
        case componentCount = "components"
        case portCount = "port_components"
        case dataBytes = "data_bytes"
        case head = "head_hex"
        case trace, reason
        case inPlace = "in_place"
        case latency = "latency_ns"
        case late
        case duration = "duration_ns"
        case mode, callout, origin
        case passNumber = "pass"
        case destinationPeer = "destination_peer"
        case sourcePeer = "source_peer"
        case actorCall = "actor_call"
        case w3cTraceID = "w3c_trace_id"
    }

    /// Reads a record; one of another version, or not a record, throws.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decode(Int.self, forKey: .version)
        guard version == Self.recordVersion else {
            throw DecodingError.dataCorruptedError(
                forKey: .version, in: container, debugDescription: "record version \(version); this reader reads \(Self.recordVersion)")
        }
        kind = try container.decode(Kind.self, forKey: .kind)
        seq = try container.decode(UInt64.self, forKey: .seq)
        pid = try container.decode(Int32.self, forKey: .pid)
        started = try container.decode(UInt64.self, forKey: .started)
        process = try container.decodeIfPresent(String.self, forKey: .process)
        monotonicTime = try container.decode(Int64.self, forKey: .monotonicTime)
        time = try container.decode(Int64.self, forKey: .time)
        tid = try container.decode(Int32.self, forKey: .tid)
        thread = try container.decode(String.self, forKey: .thread)
        destination = try container.decodeIfPresent(String.self, forKey: .destination) ?? ""
        source = try container.decodeIfPresent(String.self, forKey: .source)
        msgid = try container.decode(UInt32.self, forKey: .msgid)
        componentCount = try container.decode(Int.self, forKey: .componentCount)
        portCount = try container.decode(Int.self, forKey: .portCount)
        dataBytes = try container.decode(Int.self, forKey: .dataBytes)
        let hex = try container.decode(String.self, forKey: .head)
        guard let bytes = Self.bytes(fromHex: hex) else {
            throw DecodingError.dataCorruptedError(forKey: .head, in: container, debugDescription: "not hexadecimal: \(hex)")
        }
        head = bytes
        if let text = try container.decodeIfPresent(String.self, forKey: .trace) {
            guard let value = UInt64(text, radix: 16) else {
                throw DecodingError.dataCorruptedError(forKey: .trace, in: container, debugDescription: "not hexadecimal: \(text)")
            }
            trace = value
        }
        reason = try container.decodeIfPresent(String.self, forKey: .reason)
        inPlace = try container.decodeIfPresent(Bool.self, forKey: .inPlace) ?? false
        latency = try container.decodeIfPresent(Int64.self, forKey: .latency)
        late = try container.decodeIfPresent(Bool.self, forKey: .late)
        duration = try container.decodeIfPresent(Int64.self, forKey: .duration)
        mode = try container.decodeIfPresent(String.self, forKey: .mode)
        callout = try container.decodeIfPresent(String.self, forKey: .callout)
        origin = try container.decodeIfPresent(String.self, forKey: .origin)
        passNumber = try container.decodeIfPresent(UInt64.self, forKey: .passNumber)
        destinationPeer = try container.decodeIfPresent(String.self, forKey: .destinationPeer)
        sourcePeer = try container.decodeIfPresent(String.self, forKey: .sourcePeer)
        actorCall = try container.decodeIfPresent(ActorCall.self, forKey: .actorCall)
        if let id = try container.decodeIfPresent(String.self, forKey: .w3cTraceID) {
            guard Self.isW3CTraceID(id) else {
                throw DecodingError.dataCorruptedError(
                    forKey: .w3cTraceID, in: container, debugDescription: "not a W3C trace id (32 lowercase hex digits, not all 0): \(id)")
            }
            w3cTraceID = id
        }
    }

    /// 32 lowercase hex digits, not all zero: a trace id as W3C Trace
    /// Context writes it.
    static func isW3CTraceID(_ text: String) -> Bool {
        let utf8 = text.utf8
        return utf8.count == 32 && utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) } && utf8.contains { $0 != 0x30 }
    }

    /// Writes the record: the trace id as hexadecimal text (ids pass 2^53,
    /// past what a JSON reader's doubles hold), the head as hexadecimal.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(Self.recordVersion, forKey: .version)
        try container.encode(kind, forKey: .kind)
        try container.encode(seq, forKey: .seq)
        try container.encode(pid, forKey: .pid)
        try container.encode(started, forKey: .started)
        try container.encodeIfPresent(process, forKey: .process)
        try container.encode(monotonicTime, forKey: .monotonicTime)
        try container.encode(time, forKey: .time)
        try container.encode(tid, forKey: .tid)
        try container.encode(thread, forKey: .thread)
        if !destination.isEmpty { try container.encode(destination, forKey: .destination) }
        try container.encodeIfPresent(source, forKey: .source)
        try container.encode(msgid, forKey: .msgid)
        try container.encode(componentCount, forKey: .componentCount)
        try container.encode(portCount, forKey: .portCount)
        try container.encode(dataBytes, forKey: .dataBytes)
        try container.encode(Self.hex(head), forKey: .head)
        try container.encodeIfPresent(trace.map { String($0, radix: 16) }, forKey: .trace)
        try container.encodeIfPresent(reason, forKey: .reason)
        if inPlace { try container.encode(true, forKey: .inPlace) }
        try container.encodeIfPresent(latency, forKey: .latency)
        try container.encodeIfPresent(late, forKey: .late)
        try container.encodeIfPresent(duration, forKey: .duration)
        try container.encodeIfPresent(mode, forKey: .mode)
        try container.encodeIfPresent(callout, forKey: .callout)
        try container.encodeIfPresent(origin, forKey: .origin)
        try container.encodeIfPresent(passNumber, forKey: .passNumber)
        try container.encodeIfPresent(destinationPeer, forKey: .destinationPeer)
        try container.encodeIfPresent(sourcePeer, forKey: .sourcePeer)
        try container.encodeIfPresent(actorCall, forKey: .actorCall)
        try container.encodeIfPresent(w3cTraceID, forKey: .w3cTraceID)
    }

    /// Bytes as lower-case hexadecimal, two digits each.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static func bytes(fromHex hex: String) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = 0
        while index < utf8.count {
            guard let byte = UInt8(String(decoding: utf8[index..<index + 2], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
            index += 2
        }
        return bytes
    }
}
