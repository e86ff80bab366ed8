internal import CLinuxSupport
import Glibc
import Logging
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The port traffic tap: when on, every port send and every delivery in this
/// process is reported to a sniffer (`portsniff`) listening on a ZeroMQ
/// endpoint, by default `ipc://<runtime directory>/tap.sock`.
///
/// Switch it on with `RUNLOOPKIT_TAP=1` in the environment (the default
/// endpoint) or `RUNLOOPKIT_TAP=<endpoint>`, or with `PortTap.enable()`.
/// `RUNLOOPKIT_TAP_BYTES=<n>` (default 16) sets how many leading bytes of
/// each data component an event carries.
///
/// The tap never blocks a sender and costs it a bounded amount: an event is
/// put in a bounded queue under a short lock, and the `rlk-tap` thread sends
/// the queue on with non-blocking sends. When the queue is full, or no
/// sniffer is there to take an event, the event is dropped and counted; the
/// count travels in every later event, so it reaches the sniffer. When the
/// tap is off, a message pays one atomic load and one branch.
public enum PortTap {
    /// Whether the tap is on in this process.
    public static var isEnabled: Bool { active.load(ordering: .relaxed) }

    /// Events dropped so far in this process.
    public static var droppedEventCount: UInt64 { TapPipeline.shared.droppedCount }

    /// Events produced so far in this process, passed on or dropped: the
    /// number of the last one (`PortTapEvent.seq`, S-TAP-1).
    public static var producedEventCount: UInt64 { TapPipeline.shared.producedCount }

    /// The default endpoint: `ipc://<runtime directory>/tap.sock`.
    public static func defaultEndpoint() throws(PortError) -> String {
        "ipc://" + (try RuntimeDirectory.path()) + "/tap.sock"
    }

    /// Switches the tap on, reporting to `endpoint` (default: `defaultEndpoint()`).
    /// - Parameters:
    ///   - endpoint: a ZeroMQ endpoint to PUSH events to; nil for the default.
    ///   - dataBytes: leading bytes of each data component to report.
    public static func enable(endpoint: String? = nil, dataBytes: Int = 16) throws(PortError) {
        let target: String
        if let endpoint { target = endpoint } else { target = try defaultEndpoint() }
        try TapPipeline.shared.start(endpoint: target, dataBytes: max(0, min(dataBytes, 4096)))
        active.store(true, ordering: .releasing)
    }

    /// Switches the tap off; events already queued are still sent.
    public static func disable() {
        active.store(false, ordering: .releasing)
    }

    // MARK: - Internals

    static let active = Atomic<Bool>(false)

    /// Reads RUNLOOPKIT_TAP once, when the first port or send right is made:
    /// a process that only sends is tapped as well as one that receives.
    static let configuredFromEnvironment: Bool = {
        guard let raw = getenv("RUNLOOPKIT_TAP"), raw.pointee != 0 else { return false }
        let value = String(cString: raw)
        guard value != "0" else { return false }
        var bytes = 16
        if let rawBytes = getenv("RUNLOOPKIT_TAP_BYTES"), let parsed = Int(String(cString: rawBytes)) { bytes = parsed }
        do {
            try enable(endpoint: value == "1" ? nil : value, dataBytes: bytes)
        } catch {
            Logger(label: "RunLoopKit.PortTap").error("RUNLOOPKIT_TAP=\(value): the tap could not start: \(error)")
        }
        return true
    }()

    private static let nextTrace = Atomic<UInt64>(1)

    /// A trace id unique across processes: pid in the high bits.
    static func makeTraceID() -> UInt64 {
        (UInt64(UInt32(bitPattern: ProcessIdentity.current.pid)) << 40) | (nextTrace.wrappingAdd(1, ordering: .relaxed).oldValue & 0xFF_FFFF_FFFF)
    }

    /// Wall-clock nanoseconds, as events carry them.
    static func now() -> Int64 { rlk_realtime_nanoseconds() }

    static func recordSend(
        to destination: Port, msgid: UInt32, components: [PortMessage.Component], replyPort: Port?, traceID: UInt64, time: Int64
    ) {
        TapPipeline.shared.record(kind: .send, time: time, destination: destination, msgid: msgid, components: components,
                                  source: replyPort, traceID: traceID)
    }

    static func recordDelivery(_ message: PortMessage, on port: Port, traceID: UInt64?) {
        TapPipeline.shared.record(kind: .deliver, time: now(), destination: port, msgid: message.msgid,
                                  components: message.components, source: message.replyPort, traceID: traceID)
    }
}
