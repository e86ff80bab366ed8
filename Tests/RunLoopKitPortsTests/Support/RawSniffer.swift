// The tap tests' reader and counter: a sniffer made of a bare socket,
// reading the tap's batches with the public decoder, and a count of
// deliveries that a test waits for (the tap tests in Tap/).
import Glibc
import RunLoopKit
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Synchronization
import ZeroMQ

final class DeliveryCounter: Sendable {
    private let count = Atomic<Int>(0)
    func increment() { count.wrappingAdd(1, ordering: .relaxed) }
    func waitFor(_ target: Int, timeout: Double = 60) -> Bool { waitUntil(timeout: timeout) { count.load(ordering: .relaxed) >= target } }
}

/// A sniffer made of a bare PULL socket, reading the tap's batches with
/// the public decoder.
final class RawSniffer {
    let endpoint: String
    private let socket: Socket
    private var decoder = PortTapDecoder()
    /// The tap's drop count, as the last batch received gave it.
    private(set) var lastDropped: UInt64 = 0
    /// The number of the last event received.
    private(set) var lastSeq: UInt64 = 0

    /// The private directory made for the endpoint, removed with the sniffer.
    private let directory: String?

    init(endpoint: String? = nil, receiveHighWaterMark: Int32 = 1000) throws {
        directory = endpoint == nil ? makeTemporaryDirectory() : nil
        self.endpoint = endpoint ?? "ipc://\(directory!)/tap.sock"
        socket = try ZMQContext.shared.makeSocket(.pull)
        try socket.setReceiveHighWaterMark(receiveHighWaterMark)
        try socket.bind(self.endpoint)
    }

    /// The events of one batch, waiting at most `timeout` seconds; nil when none came.
    private func batch(timeout: Double) -> [PortTapEvent]? {
        try? socket.setReceiveTimeout(milliseconds: Int32(timeout * 1000))
        guard let frames = try? socket.receiveMultipart() else { return nil }
        guard let batch = try? decoder.decode(frames) else { return [] }
        lastDropped = batch.dropped
        lastSeq = max(lastSeq, batch.events.last?.seq ?? 0)
        return batch.events
    }

    /// At least `count` events if they come, waiting at most `timeout`
    /// seconds for each batch (warm-up probes left out unless `count` is 1).
    func receive(_ count: Int, timeout: Double = 10) -> [PortTapEvent] {
        var events: [PortTapEvent] = []
        while events.count < count, let more = batch(timeout: timeout) { events += more }
        return events.filter { $0.msgid != 0xFFFF_FFFF || count == 1 }
    }

    /// Every event that comes within `timeout` seconds of the one before, warm-ups included.
    func receiveAll(timeout: Double) -> [PortTapEvent] {
        var events: [PortTapEvent] = []
        while let more = batch(timeout: timeout) { events += more }
        return events
    }

    /// Every event until `count` have come (waiting at most `timeout`
    /// seconds for each batch, a safety net), then every one that comes
    /// within `quiet` seconds of the one before: all of a traffic that has
    /// ended, however late the tap passes it on, and anything after it.
    func receiveAll(atLeast count: Int, timeout: Double = 30, quiet: Double = 0.5) -> [PortTapEvent] {
        var events: [PortTapEvent] = []
        while events.count < count, let more = batch(timeout: timeout) { events += more }
        return events + receiveAll(timeout: quiet)
    }

    /// Stops listening as a sniffer does: closes the socket and removes its file.
    func leave() {
        socket.close()
        if endpoint.hasPrefix("ipc://") { unlink(String(endpoint.dropFirst("ipc://".count))) }
    }

    deinit {
        socket.close()
        if let directory { PortProcess.removeTree(directory) }
    }
}
