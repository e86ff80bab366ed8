// The port traffic tap (issue: see port traffic live): every send and
// delivery reported, exactly; drops counted, never a blocked sender; a
// sniffer may start before or after the processes it watches. Here the
// sniffer is a bare socket (RawSniffer); portsniff's own tests are
// PortSniffTests.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing
import ZeroMQ

@Suite("Port traffic tap", .blocksThreads)
struct PortTapTests {
    // MARK: - The tap in the library (each in a child process: the tap is per process)

    @Test("tap: one send and one delivery event per message, paired by trace id, with msgid, ports and component sizes")
    func everyMessageReported() async {
        await #expect(processExitsWith: .success) {
            let sniffer = try RawSniffer()
            try PortTap.enable(endpoint: sniffer.endpoint, dataBytes: 4)
            let (worker, port, delivered) = try PortTapTests.servedPort("tap-exact")
            try PortTapTests.warmUp(port, sniffer, delivered)
            let count = 500
            for index in 0..<count {
                try port.send(msgid: UInt32(1000 + index), components: [.data(Data([0xAB, 0xCD, 0xEF, 0x01, 0x02])), .port(port)],
                              before: Date() + 5)
            }
            try PortTapTests.require(delivered.waitFor(count))
            let events = sniffer.receive(2 * count)
            let (_, deliveries) = try PortTapTests.requirePaired(events, count: count, firstMsgid: 1000)
            let first = deliveries[0]
            try PortTapTests.require(first.thread == "tap-exact" && first.pid == getpid() && first.destination == port.tapLabel)
            try PortTapTests.require(first.componentCount == 2 && first.portCount == 1 && first.dataBytes == 5
                                     && first.head == [0xAB, 0xCD, 0xEF, 0x01], "\(first)")
            try PortTapTests.require(first.process == TapNames.processName && first.tid > 0 && first.tid != getpid())
            try PortTapTests.require(PortTap.droppedEventCount == 0 && sniffer.lastDropped == 0)
            port.invalidate()
            worker.stop()
        }
    }

    @Test("tap: messages sent from bytes and read in place are reported as any others: paired, with msgid and components")
    func inPlaceReported() async {
        await #expect(processExitsWith: .success) {
            let sniffer = try RawSniffer()
            try PortTap.enable(endpoint: sniffer.endpoint, dataBytes: 4)
            let (worker, port, delivered) = try PortTapTests.servedPort("tap-in-place", inPlace: true)
            try PortTapTests.warmUp(port, sniffer, delivered)
            let count = 100
            let payload: [UInt8] = [0xAB, 0xCD, 0xEF, 0x01, 0x02]
            for index in 0..<count {
                try payload.withUnsafeBytes { bytes in try port.send(msgid: UInt32(2000 + index), bytes: bytes, before: Date() + 5) }
            }
            try PortTapTests.require(delivered.waitFor(count))
            let (sends, deliveries) = try PortTapTests.requirePaired(sniffer.receive(2 * count), count: count, firstMsgid: 2000)
            for event in [sends[0], deliveries[0]] {
                try PortTapTests.require(event.componentCount == 1 && event.dataBytes == 5 && event.head == [0xAB, 0xCD, 0xEF, 0x01], "\(event)")
            }
            try PortTapTests.require(deliveries.allSatisfy(\.inPlace) && !sends.contains(where: \.inPlace), "a delivery read in place is marked so")
            port.invalidate()
            worker.stop()
        }
    }

    @Test("tap: threads are named as a reader can use them: a LoopThread by its name, libdispatch's workers (DispatchQueue.global(), Swift tasks) as dispatch-<qos>")
    func dispatchThreadsAreNamed() async {
        await #expect(processExitsWith: .success) {
            let sniffer = try RawSniffer()
            try PortTap.enable(endpoint: sniffer.endpoint)
            let (worker, port, delivered) = try PortTapTests.servedPort("tap-names")
            let warmUps = try PortTapTests.warmUp(port, sniffer, delivered)
            let sent = DispatchSemaphore(value: 0)
            DispatchQueue.global(qos: .utility).async {
                try? port.send(msgid: 1, before: Date() + 5)
                sent.signal()
            }
            try PortTapTests.require(sent.wait(timeout: .now() + 30) == .success)
            Task.detached(priority: .medium) {
                try? port.send(msgid: 2, before: Date() + 5)
                sent.signal()
            }
            try PortTapTests.require(sent.wait(timeout: .now() + 30) == .success)
            try PortTapTests.require(delivered.waitFor(warmUps + 2))
            let events = sniffer.receive(4, timeout: 10)
            let threads = Dictionary(events.map { ("\($0.kind) \($0.msgid)", $0.thread) }) { first, _ in first }
            try PortTapTests.require(threads["send 1"] == "dispatch-utility", "a global queue's worker: \(threads)")
            try PortTapTests.require(threads["send 2"]?.hasPrefix("dispatch-") == true, "a Swift task's thread: \(threads)")
            try PortTapTests.require(threads["deliver 1"] == "tap-names" && threads["deliver 2"] == "tap-names", "\(threads)")
            port.invalidate()
            worker.stop()
        }
    }

    @Test("S-TAP-1: several sniffers at once, as two tcpdumps on one interface: each in the readers' directory gets every event, numbered alike; one started later gets all that follows; one that leaves changes nothing for the others")
    func severalSniffers() async {
        await #expect(processExitsWith: .success) {
            let runtime = makeTemporaryDirectory("rlk-tap-readers")
            defer { PortProcess.removeTree(runtime) }
            setenv("RUNLOOPKIT_RUNTIME_DIR", runtime, 1)
            let first = try RawSniffer(endpoint: PortTap.readerEndpoint())
            let second = try RawSniffer(endpoint: PortTap.readerEndpoint())
            try PortTap.enable()  // no endpoint: every sniffer in the readers' directory
            try PortTapTests.require(TapPipeline.shared.readerCount == 2, "\(TapPipeline.shared.readerCount) readers connected, not 2")
            let (worker, port, delivered) = try PortTapTests.servedPort("tap-readers")
            var sent = 0
            func send(_ count: Int) throws {
                for index in 0..<count { try port.send(msgid: UInt32(index), components: [.data(Data(count: 8))], before: Date() + 5) }
                sent += count
                try PortTapTests.require(delivered.waitFor(sent))
            }
            try send(100)
            // Each reader's 200 events of the 100 messages, waited for (the
            // tap thread may run late on a loaded machine), then any more.
            var got: [[PortTapEvent]] = [first.receiveAll(atLeast: 200), second.receiveAll(atLeast: 200), []]
            // A third starts: the tap finds it in the directory and connects to it.
            let third = try RawSniffer(endpoint: PortTap.readerEndpoint())
            try PortTapTests.require(waitUntil(timeout: 10) { TapPipeline.shared.readerCount == 3 }, "the third reader was not connected")
            // The first leaves: the others go on as before.
            first.leave()
            try PortTapTests.require(waitUntil(timeout: 10) { TapPipeline.shared.readerCount == 2 }, "the first reader's socket was kept")
            try send(100)
            got[1] += second.receiveAll(atLeast: 200)
            got[2] += third.receiveAll(atLeast: 200)
            let numbers = got.map { $0.map(\.seq) }
            try PortTapTests.require(numbers[0] == Array(1...200), "the first reader got \(numbers[0].count) events: \(numbers[0].prefix(5))…")
            try PortTapTests.require(numbers[1] == Array(1...400), "the second reader got \(numbers[1].count) events")
            try PortTapTests.require(numbers[2] == Array(201...400), "the third reader got \(numbers[2].first.map(String.init) ?? "none")…\(numbers[2].last.map(String.init) ?? "")")
            try PortTapTests.require(PortTap.droppedEventCount == 0, "\(PortTap.droppedEventCount) events dropped")
            port.invalidate()
            worker.stop()
        }
    }

    @Test("S-TAP-1: failed sends and messages dropped on receipt (no handler, malformed) are events of their own, sendFailed and dropped, with their reason; a message nobody handled is never a DELIVER")
    func failuresAreEventsOfTheirOwn() async {
        await #expect(processExitsWith: .success) {
            let sniffer = try RawSniffer()
            try PortTap.enable(endpoint: sniffer.endpoint)
            // A port scheduled with no handler: what arrives is dropped.
            let (thread, loop) = try makePortLoopThread("tap-failures")
            let port = try Port(transport: .inproc)
            try port.schedule(in: loop, forMode: .default)
            for msgid in UInt32(1)...3 { try port.send(msgid: msgid, before: Date() + 5) }
            // A malformed message from a raw peer.
            let peer = try RawPortPeer(endpoint: port.address.inprocEndpoint)
            try peer.send([Data("RLKX, not a header".utf8)])
            // A send to an invalid port, and one with too many components.
            let gone = try Port(transport: .inproc)
            gone.invalidate()
            try PortTapTests.require((try? gone.send(msgid: 9, before: Date() + 5)) == nil, "a send to an invalid port went through")
            let tooMany = [PortMessage.Component](repeating: .data(Data()), count: WireFormat.maxComponents + 1)
            try PortTapTests.require((try? port.send(msgid: 10, components: tooMany, before: Date() + 5)) == nil, "an oversized message went through")
            let events = sniffer.receive(9, timeout: 10)
            func of(_ kind: PortTapEvent.Kind) -> [String] {
                events.filter { $0.kind == kind }.map { "\($0.msgid) \($0.reason ?? "-")" }.sorted()
            }
            try PortTapTests.require(of(.send) == ["1 -", "2 -", "3 -"], "sends: \(of(.send))")
            try PortTapTests.require(of(.deliver).isEmpty, "deliveries of messages nobody handled: \(of(.deliver))")
            try PortTapTests.require(of(.messageDropped) == ["0 malformed: bad magic", "1 no message handler", "2 no message handler", "3 no message handler"],
                                     "drops: \(of(.messageDropped))")
            try PortTapTests.require(of(.sendFailed) == ["10 messageTooLarge", "9 invalidPort"], "failed sends: \(of(.sendFailed))")
            port.invalidate()
            thread.stop()
        }
    }

    @Test("tap: a sniffer started after the traffic began gets the events from then on, with the drops before it counted")
    func snifferStartedLate() async {
        await #expect(processExitsWith: .success) {
            let directory = makeTemporaryDirectory()
            defer { PortProcess.removeTree(directory) }
            let endpoint = "ipc://\(directory)/tap.sock"
            try PortTap.enable(endpoint: endpoint)  // nobody listens yet
            let (worker, port, delivered) = try PortTapTests.servedPort("tap-late")
            for index in 0..<10 { try port.send(msgid: UInt32(index), before: Date() + 2) }
            try PortTapTests.require(delivered.waitFor(10))
            try PortTapTests.require(waitUntil(timeout: 10) { PortTap.droppedEventCount == 20 }, "events with no sniffer must be counted")
            let sniffer = try RawSniffer(endpoint: endpoint)
            try PortTapTests.warmUp(port, sniffer, delivered, already: 10)
            try port.send(msgid: 4242, before: Date() + 2)
            let events = sniffer.receive(2, timeout: 30)
            try PortTapTests.require(events.map(\.msgid) == [4242, 4242] && sniffer.lastDropped >= 20)
            port.invalidate()
            worker.stop()
        }
    }

    @Test("tap: a process that only sends (it looks a port up and never makes one) is tapped under RUNLOOPKIT_TAP: every send is an event")
    func sendOnlyProcessIsTapped() async throws {
        let name = PortProcess.uniqueName("tap-send-only")
        let inbox = try IPCInbox("tap-send-only", keepMessages: false)
        try PortNameServer.register(inbox.port, name: name)
        defer {
            inbox.close()
            PortProcess.removeNameFiles(name)
        }
        await #expect(processExitsWith: .success) { [name = name as String] in
            let directory = makeTemporaryDirectory()
            defer { PortProcess.removeTree(directory) }
            let endpoint = "ipc://\(directory)/tap.sock"
            // Listening before the variable is read, as a sniffer started first would.
            let sniffer = try RawSniffer(endpoint: endpoint)
            setenv("RUNLOOPKIT_TAP", endpoint, 1)
            let server = try PortNameServer.lookup(name, timeout: .seconds(60))
            try PortTapTests.require(PortTap.isEnabled, "a lookup alone must read RUNLOOPKIT_TAP")
            for index in 0..<5 { try server.send(msgid: UInt32(100 + index), before: Date() + 10) }
            let events = sniffer.receive(5, timeout: 30)
            try PortTapTests.require(events.map(\.msgid) == [100, 101, 102, 103, 104] && events.allSatisfy { $0.kind == .send },
                                     "the sends of a process with no port of its own: \(events.map(\.msgid))")
        }
    }

    @Test("tap: off by default; RUNLOOPKIT_TAP unset means no events and no trace ids")
    func offByDefault() {
        #expect(getenv("RUNLOOPKIT_TAP") != nil || !PortTap.isEnabled)
    }

    // MARK: - Helpers (run in the child processes)

    struct Failure: Error, CustomStringConvertible { let description: String }

    static func require(_ condition: Bool, _ message: @autoclosure () -> String = "requirement failed",
                        file: String = #file, line: Int = #line) throws {
        guard condition else {
            writeToStandardError("\(file):\(line): \(message())\n")
            throw Failure(description: message())
        }
    }

    /// Requires `events` to be `count` sends and `count` deliveries of msgids
    /// `firstMsgid`, `firstMsgid + 1`, … in order, each send paired with
    /// exactly one delivery by trace id. Returns the sends and the deliveries.
    static func requirePaired(
        _ events: [PortTapEvent], count: Int, firstMsgid: UInt32
    ) throws -> (sends: [PortTapEvent], deliveries: [PortTapEvent]) {
        try require(events.count == 2 * count, "got \(events.count) events of \(2 * count)")
        let sends = events.filter { $0.kind == .send }, deliveries = events.filter { $0.kind == .deliver }
        let msgids = (0..<count).map { firstMsgid + UInt32($0) }
        try require(sends.map(\.msgid) == msgids, "sends out of order or missing")
        try require(deliveries.map(\.msgid) == msgids, "deliveries out of order or missing")
        let traces = Set(sends.compactMap(\.trace))
        try require(traces == Set(deliveries.compactMap(\.trace)) && traces.count == count, "every send must pair with exactly one delivery")
        return (sends, deliveries)
    }

    /// Batches of 16 records and a queue of 2 batches towards the reader:
    /// a reader that stops reading is full after a few hundred events,
    /// however big the batches a slow machine would otherwise make (with
    /// 4,096-record batches, 74 queued held all 40,000 events of a test and
    /// nothing was dropped). In the exit tests' child processes only.
    static func smallBatches() {
        TapPipeline.batchRecords = 16
        TapPipeline.socketHighWaterMark = 2
    }

    /// A LoopThread receiving on a port, counting deliveries (read in place
    /// with `inPlace`).
    static func servedPort(_ name: String, inPlace: Bool = false) throws -> (LoopThread, Port, DeliveryCounter) {
        let worker = LoopThread(name: name)
        try worker.start()
        let port = try Port(transport: .inproc)
        let counter = DeliveryCounter()
        if inPlace {
            port.setInPlaceMessageHandler { _ in counter.increment() }
        } else {
            port.setMessageHandler { _ in counter.increment() }
        }
        try port.schedule(in: worker.runLoop!, forMode: .default)
        return (worker, port, counter)
    }

    /// Sends probe messages until the sniffer gets their events (the tap's
    /// connection is up), then takes every event numbered so far (they come
    /// in the order of their numbers, so up to the last one produced), so
    /// that none of the warm-up's reaches a later receive, however late the
    /// tap thread runs. Returns the probes sent.
    @discardableResult
    static func warmUp(_ port: Port, _ sniffer: RawSniffer, _ delivered: DeliveryCounter, already: Int = 0) throws -> Int {
        var sent = 0
        while true {
            try port.send(msgid: 0xFFFF_FFFF, before: Date() + 2)
            sent += 1
            try require(delivered.waitFor(already + sent))
            if !sniffer.receive(1, timeout: 0.1).isEmpty { break }
            try require(sent < 200, "the tap never connected")
        }
        let produced = PortTap.producedEventCount
        let settled = waitUntil(timeout: 60) {
            _ = sniffer.receive(Int.max, timeout: 0.05)
            return sniffer.lastSeq >= produced
        }
        try require(settled, "the warm-up's events up to \(produced) never all came (last \(sniffer.lastSeq))")
        return sent
    }
}
