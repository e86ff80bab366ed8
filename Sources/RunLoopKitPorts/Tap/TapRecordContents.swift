internal import CLinuxSupport
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What a tap record says about a message's components (docs/tap-format.md,
/// "Records (frame 2)"): how many, how many of them ports, the data bytes in all, and
/// the first data component's size and leading bytes. Written on the
/// sending or delivering thread, into the record on its stack.
extension rlk_tap_record {
    /// Describes a message's components; at most `headBytes` leading bytes
    /// of the first data component are kept.
    @inline(__always)
    mutating func describe(_ components: [PortMessage.Component], headBytes: Int) {
        self.components = UInt16(clamping: components.count)
        var sawData = false
        for component in components {
            switch component {
            case .port:
                port_components &+= 1
            case let .data(data):
                data.withUnsafeBytes { describeData($0, first: !sawData, headBytes: headBytes) }
                sawData = true
            }
        }
    }

    /// The same from a message read in place: nothing copied but the head.
    @inline(__always)
    mutating func describe(_ view: borrowing PortMessageView, headBytes: Int) {
        let count = view.componentCount
        components = UInt16(clamping: count)
        var sawData = false
        for index in 0..<count {
            if view.isPort(at: index) {
                port_components &+= 1
            } else {
                describeData(view.unsafeBytes(ofComponent: index), first: !sawData, headBytes: headBytes)
                sawData = true
            }
        }
    }

    /// Counts a data component's bytes; the first one's size and leading
    /// bytes go in the record.
    @inline(__always)
    mutating func describeData(_ bytes: UnsafeRawBufferPointer, first: Bool, headBytes: Int) {
        data_bytes &+= UInt64(bytes.count)
        guard first else { return }
        first_data_size = UInt32(clamping: bytes.count)
        let count = min(bytes.count, headBytes)
        guard count > 0, let base = bytes.baseAddress else { return }
        head_length = UInt8(count)
        withUnsafeMutableBytes(of: &head) { $0.baseAddress!.copyMemory(from: base, byteCount: count) }
    }
}

extension rlk_tap_record {
    /// Marks the record as a distributed actor's call, reply or
    /// cancellation (docs/tap-format.md, "Actor calls").
    mutating func note(_ call: rlk_tap_call) {
        self.call = call.call
        actor = call.actor
        method = call.method
        call_role = call.role
        outcome = call.outcome
    }
}

/// The W3C trace id a tap record carries (version 4, docs/tap-format.md,
/// "Trace context"): the message's trace id, or zero for a message sent
/// outside any trace. Two words rather than an optional context, which a
/// send would copy with its trace state.
struct TapW3CTraceID {
    var high: UInt64
    var low: UInt64

    static var none: TapW3CTraceID { TapW3CTraceID(high: 0, low: 0) }

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    init(_ context: PortTraceContext) {
        self.init(high: context.traceIDHigh, low: context.traceIDLow)
    }
}

extension rlk_tap_record {
    /// Writes the W3C trace id in traceparent's byte order (big-endian), so
    /// that the record's 16 bytes in hex are the id as tracers show it.
    @inline(__always)
    mutating func note(_ id: TapW3CTraceID) {
        guard id.high | id.low != 0 else { return }
        withUnsafeMutableBytes(of: &w3c_trace_id) { bytes in
            bytes.storeBytes(of: id.high.bigEndian, toByteOffset: 0, as: UInt64.self)
            bytes.storeBytes(of: id.low.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
    }
}
