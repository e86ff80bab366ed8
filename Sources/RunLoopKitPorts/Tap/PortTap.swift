internal import CLinuxSupport
import Glibc
import Logging
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The port traffic tap: when on, every port send and every delivery in this
/// process is reported to sniffers (`portsniff`): by default to every one
/// listening in the readers' directory (`<runtime directory>/tap/`), each
/// seeing the whole traffic on a socket of its own, or to one ZeroMQ
/// endpoint.
///
/// Switch it on with `RUNLOOPKIT_TAP=1` in the environment (every sniffer in
/// the readers' directory) or `RUNLOOPKIT_TAP=<endpoint>`, or with
/// `PortTap.enable()`.
/// `RUNLOOPKIT_TAP_BYTES=<n>` (default and most 16) sets how many leading
/// bytes of a message's first data component an event carries.
///
/// The tap never blocks a sender and costs it a bounded amount: an event is
/// one fixed-size record put in a lock-free ring (numbers only: no String,
/// no allocation, no lock), and the `rlk-tap` thread sends the records on
/// in batches with non-blocking sends (docs/tap-format.md). Every event is
/// numbered; when the ring is full, or no sniffer is there to take an
/// event, it is dropped and counted, and a sniffer sees the gap. When the
/// tap is off, a message pays one atomic load and one branch.
public enum PortTap {
    /// Whether the tap is on in this process.
    public static var isEnabled: Bool { active.load(ordering: .relaxed) }

    /// When this process started, in clock ticks since boot, as its tap
    /// events (`PortTapEvent.started`) and count file give it: what a
    /// sniffer compares a process's start with its own.
    public static var processStartTime: UInt64 { ProcessIdentity.current.startTime }

    /// Events dropped so far in this process.
    public static var droppedEventCount: UInt64 { TapPipeline.shared.droppedCount }

    /// Events produced so far in this process, passed on or dropped: the
    /// number of the last one (`PortTapEvent.seq`, S-TAP-1).
    public static var producedEventCount: UInt64 { TapPipeline.shared.producedCount }

    /// The readers' directory: `<runtime directory>/tap`, made if need be.
    /// Each sniffer binds a socket of its own there (`readerEndpoint()`),
    /// and a tap switched on without an endpoint reports to every one of
    /// them, as many as come and go.
    public static func readersDirectory() throws(PortError) -> String {
        try TapFanOut.directoryPath()
    }

    /// An endpoint for a new sniffer in the readers' directory:
    /// `ipc://<runtime directory>/tap/<pid>-<n>.sock`, unique to the calling
    /// process. A sniffer binds it (files 0600) and removes its file when
    /// it stops; the file of one that died is removed by the next tap that
    /// looks.
    public static func readerEndpoint() throws(PortError) -> String {
        "ipc://" + (try readersDirectory()) + "/\(getpid())-\(nextReader.wrappingAdd(1, ordering: .relaxed).newValue).sock"
    }

    private static let nextReader = Atomic<UInt64>(0)

    /// The most leading bytes of a message's first data component an event
    /// carries (16): what `enable(endpoint:dataBytes:)` and
    /// `RUNLOOPKIT_TAP_BYTES` can ask for, and `portsniff --hex` can show.
    public static let maxDataBytes = TapWireFormat.headBytes

    /// Switches the tap on, reporting to `endpoint`, or with none to every
    /// sniffer in the readers' directory (`readersDirectory()`).
    /// - Parameters:
    ///   - endpoint: a ZeroMQ endpoint to PUSH events to, one sniffer's;
    ///     nil for every sniffer in the readers' directory.
    ///   - dataBytes: leading bytes of the first data component to report
    ///     (at most `maxDataBytes`).
    public static func enable(endpoint: String? = nil, dataBytes: Int = 16) throws(PortError) {
        try TapPipeline.shared.start(endpoint: endpoint, dataBytes: max(0, min(dataBytes, maxDataBytes)))
        active.store(true, ordering: .releasing)
    }

    /// Also reports every loop's passes, sleeps and callouts as events
    /// (`pass`, `sleep`, `callout`), for a timeline of what each loop thread
    /// did (`portsniff --loops`, `portsniff timeline`); off by default, and
    /// what `RUNLOOPKIT_TAP_LOOPS=1` switches on. It installs the process's
    /// `RunLoop.tracer` (a loop's own `monitor` still hears of everything
    /// first); `traceLoops(false)` removes it. Each pass then costs two
    /// clock reads and a record, each callout two clock reads and a record.
    public static func traceLoops(_ on: Bool = true) {
        RunLoop.tracer = on ? TapLoopTracer.shared : nil
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
            if let loops = getenv("RUNLOOPKIT_TAP_LOOPS"), String(cString: loops) == "1" { traceLoops() }
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

    /// Wall-clock nanoseconds (count files).
    static func now() -> Int64 { rlk_realtime_nanoseconds() }

    /// CLOCK_MONOTONIC nanoseconds, as events carry them.
    static func eventTime() -> Int64 { Int64(bitPattern: rlk_monotonic_nanoseconds()) }

    static func recordSend(
        to destination: Port, msgid: UInt32, components: [PortMessage.Component], replyPort: Port?, traceID: UInt64, time: Int64,
        w3cTraceID: TapW3CTraceID
    ) {
        TapPipeline.shared.recordSend(to: destination, msgid: msgid, components: components, replyPort: replyPort,
                                      traceID: traceID, time: time, w3cTraceID: w3cTraceID)
    }

    static func recordSend(
        to destination: Port, msgid: UInt32, bytes: UnsafeRawBufferPointer, replyPort: Port?, traceID: UInt64, time: Int64,
        w3cTraceID: TapW3CTraceID
    ) {
        TapPipeline.shared.recordSend(
            to: destination, msgid: msgid, bytes: bytes, replyPort: replyPort, traceID: traceID, time: time, w3cTraceID: w3cTraceID)
    }

    /// A send that threw (nothing was sent), with the error's case.
    static func recordFailedSend(
        to destination: Port, msgid: UInt32, components: [PortMessage.Component], replyPort: Port?, error: PortError,
        w3cTraceID: TapW3CTraceID = .none
    ) {
        TapPipeline.shared.recordSend(to: destination, msgid: msgid, components: components, replyPort: replyPort,
                                      traceID: nil, time: eventTime(), reason: error.caseName, w3cTraceID: w3cTraceID)
    }

    /// A message the port dropped on receipt (no handler, malformed).
    static func recordDrop(on port: Port, msgid: UInt32, reason: PortDropReason) {
        TapPipeline.shared.recordDrop(on: port, msgid: msgid, reason: reason.description)
    }

    static func recordDelivery(_ message: PortMessage, on port: Port, traceID: UInt64?) {
        // Its handler records it, once it knows what the message is.
        if port.tapDeliveryInHandler.load(ordering: .relaxed) {
            rlk_tap_defer_delivery(traceID ?? 0)
            return
        }
        TapPipeline.shared.recordDelivery(message, on: port, traceID: traceID, call: nil)
    }

    static func recordDelivery(_ view: borrowing PortMessageView, on port: Port, traceID: UInt64?) {
        TapPipeline.shared.recordDelivery(view, on: port, traceID: traceID)
    }
}
