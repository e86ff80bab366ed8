/// The W3C trace context a message carries: the `traceparent` of the span
/// that was current where it was sent (its trace id, that span's id as the
/// parent, the trace flags) and the trace's `tracestate`, as W3C Trace
/// Context defines them for HTTP's headers of the same names.
///
/// A message carries one when it was sent while tracing was started
/// (RunLoopKitTracing) and a span was current: its handler then runs in
/// that trace, on another thread or in another process. Without tracing,
/// or without a current span, a message carries none and its wire format
/// is as it was (docs/wire-format.md, "Trace context"). Not the tap's trace
/// id, which pairs a send with its delivery.
public struct PortTraceContext: Sendable, Hashable, CustomStringConvertible {
    /// The trace id's first 8 bytes, in the order its hex digits give them
    /// (a big-endian number): the first 16 of its 32 hex digits.
    public let traceIDHigh: UInt64
    /// The trace id's last 8 bytes, as ``traceIDHigh``: its last 16 hex digits.
    public let traceIDLow: UInt64
    /// The sending span's id (the parent of the receiving side's spans).
    public let parentID: UInt64
    /// The trace flags: bit 0, sampled.
    public let flags: UInt8
    /// The trace's `tracestate` (vendors' entries), if it has one: at most
    /// ``maxTraceStateBytes`` bytes of UTF-8.
    public let traceState: String?

    /// The longest `tracestate` a message carries, in bytes (W3C's limit
    /// for what a vendor must propagate).
    public static let maxTraceStateBytes = 512

    /// A context of these fields, or nil if W3C calls them invalid: a trace
    /// id or a parent id of all zeros, or a trace state that is empty or
    /// longer than ``maxTraceStateBytes``.
    public init?(traceIDHigh: UInt64, traceIDLow: UInt64, parentID: UInt64, flags: UInt8, traceState: String? = nil) {
        guard traceIDHigh | traceIDLow != 0, parentID != 0 else { return nil }
        if let traceState, traceState.utf8.isEmpty || traceState.utf8.count > Self.maxTraceStateBytes { return nil }
        self.traceIDHigh = traceIDHigh
        self.traceIDLow = traceIDLow
        self.parentID = parentID
        self.flags = flags
        self.traceState = traceState
    }

    /// Parses a `traceparent` header value (`00-<32 hex>-<16 hex>-<2 hex>`,
    /// lowercase; a later version's value is read for these fields, as W3C
    /// asks) and an optional `tracestate`; nil if it is not a valid one.
    public init?(traceparent: String, tracestate: String? = nil) {
        let parts = traceparent.split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count >= 4, parts[0].utf8.count == 2, parts[0] != "ff",
              let version = Self.hex(parts[0]), version == 0 ? parts.count == 4 : true,
              parts[1].utf8.count == 32, parts[2].utf8.count == 16, parts[3].utf8.count == 2,
              let high = Self.hex(parts[1].prefix(16)), let low = Self.hex(parts[1].suffix(16)),
              let parent = Self.hex(parts[2]), let flags = Self.hex(parts[3])
        else { return nil }
        self.init(traceIDHigh: high, traceIDLow: low, parentID: parent, flags: UInt8(flags),
                  traceState: tracestate.flatMap { $0.isEmpty ? nil : $0 })
    }

    /// The trace id as W3C writes it: 32 lowercase hex digits.
    public var traceID: String { Self.hexDigits(traceIDHigh, 16) + Self.hexDigits(traceIDLow, 16) }

    /// The `traceparent` header value: `00-<trace id>-<parent id>-<flags>`.
    public var traceparent: String {
        "00-\(traceID)-\(Self.hexDigits(parentID, 16))-\(Self.hexDigits(UInt64(flags), 2))"
    }

    /// Whether the sender's trace is sampled (flags bit 0).
    public var isSampled: Bool { flags & 1 != 0 }

    /// The `traceparent`, then the trace state in parentheses if there is one.
    public var description: String { traceparent + (traceState.map { " (\($0))" } ?? "") }

    /// Lowercase hex digits only (W3C's form), as a number.
    private static func hex(_ text: Substring) -> UInt64? {
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        return UInt64(text, radix: 16)
    }

    private static func hexDigits(_ value: UInt64, _ count: Int) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, count - digits.count)) + digits
    }
}
