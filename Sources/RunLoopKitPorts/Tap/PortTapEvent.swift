@_spi(RunLoopKitInternals) import RunLoopKitCore

/// One event of the port traffic tap: a message sent or delivered, as the
/// tap reports it and `portsniff` shows it. Encoded as one JSON object per
/// line on the tap socket (and in `portsniff --json` / `--write`).
public struct PortTapEvent: Codable, Sendable, Hashable {
    /// What happened; encoded as "send", "deliver", "sendFailed" or "messageDropped".
    public enum Kind: String, Codable, Sendable {
        /// A thread sent the message (reported by the sender's process).
        case send
        /// A port's handler received it (reported by the receiver's process).
        case deliver
        /// A send threw: nothing was sent (`reason` names the `PortError`).
        case sendFailed
        /// A local port dropped a message on receipt instead of delivering
        /// it: it had no handler, or the message was malformed (`reason`
        /// names the `PortDropReason`; a malformed message's msgid is 0).
        /// Not to be confused with `PortTapEvent.dropped`, the tap events
        /// the tap itself could not pass on.
        case messageDropped
    }

    /// One component of the message: its kind, its size, and its first bytes
    /// (data components only, as many as the tap was told to keep).
    public struct Component: Codable, Sendable, Hashable {
        /// What a component is; encoded as "data" or "port".
        public enum Kind: String, Codable, Sendable {
            /// A data component.
            case data
            /// A port component.
            case port
        }

        /// Whether the component is data or a port.
        public var kind: Kind
        /// Bytes of a data component; 0 for a port.
        public var size: Int
        /// The first bytes of a data component, in hexadecimal; for a port,
        /// its name as the tap shows ports.
        public var head: String?

        /// A component as the tap reports it.
        public init(kind: Kind, size: Int, head: String? = nil) {
            self.kind = kind
            self.size = size
            self.head = head
        }
    }

    /// A send or a delivery.
    public var kind: Kind
    /// Wall-clock time of the event, in nanoseconds since 1970.
    public var time: Int64
    /// The process that reported the event.
    public var pid: Int32
    /// The name of the thread that sent, or on whose loop it was delivered.
    public var thread: String
    /// The port the message came from: its reply port, if it had one.
    public var source: String?
    /// The port the message was sent to.
    public var destination: String
    /// The message's msgid.
    public var msgid: UInt32
    /// The message's components, in order.
    public var components: [Component]
    /// Pairs a send with its delivery; the same in both events (hexadecimal).
    public var trace: String?
    /// Events this process's tap could not pass on so far (its queue was
    /// full, no sniffer was listening, or a sniffer's socket was full: once
    /// for each sniffer that missed it), counted from the tap's start. A
    /// sniffer counts its own misses exactly from the gaps in `seq`.
    public var dropped: UInt64
    /// Why a send failed (`sendFailed`: the `PortError`'s case, such as
    /// `invalidPort` or `timedOut`) or a message was dropped (`messageDropped`:
    /// the `PortDropReason` as logs name it, such as `no message handler`
    /// or `malformed: bad magic`); nil for the other kinds.
    public var reason: String?
    /// The event's number in its process, from 1, one for every event the
    /// tap produced, passed on or dropped (S-TAP-1): a reader that finds a
    /// gap between two numbers of one process knows exactly how many it
    /// missed. Nil in recordings made before events were numbered.
    public var seq: UInt64?
    /// When the process started, in clock ticks since the machine booted
    /// (field 22 of `/proc/<pid>/stat`): with `pid`, it names the process
    /// even after its pid is reused, and tells a reader whether the process
    /// started after it (then every event from 1 is owed to it). Nil in
    /// recordings made before events were numbered.
    public var started: UInt64?

    /// An event with every field given; the tap makes these, and portsniff decodes them.
    public init(
        kind: Kind, time: Int64, pid: Int32, thread: String, source: String?, destination: String,
        msgid: UInt32, components: [Component], trace: String?, dropped: UInt64,
        seq: UInt64? = nil, started: UInt64? = nil, reason: String? = nil
    ) {
        self.kind = kind
        self.time = time
        self.pid = pid
        self.thread = thread
        self.source = source
        self.destination = destination
        self.msgid = msgid
        self.components = components
        self.trace = trace
        self.dropped = dropped
        self.seq = seq
        self.started = started
        self.reason = reason
    }
}
