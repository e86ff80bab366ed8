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

@Suite("Port traffic tap")
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

    @Test("S-TAP-2: a sniffer that cannot keep up costs drops, counted and reported, never a blocked sender (each send keeps a 2 s deadline); nothing is lost silently")
    func overloadShowsAsDrops() async throws {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            // A sniffer that stops reading: its queue fills at once.
            let sniffer = try RawSniffer(receiveHighWaterMark: 10)
            PortTapTests.smallBatches()
            try PortTap.enable(endpoint: sniffer.endpoint)
            let (worker, port, delivered) = try PortTapTests.servedPort("tap-overload")
            let warmUps = try PortTapTests.warmUp(port, sniffer, delivered)
            let count = 20_000
            for index in 0..<count {
                // A short deadline: a send the tap slowed down would throw.
                try port.send(msgid: UInt32(index), components: [.data(Data(count: 32))], before: Date() + 2)
            }
            try PortTapTests.require(delivered.waitFor(count + warmUps))
            // Every event is either with the sniffer or counted as dropped.
            let total = 2 * (count + warmUps)
            var received = warmUps * 2
            let balanced = waitUntil(timeout: 60) {
                received += sniffer.receive(total, timeout: 0.05).count
                return received + Int(PortTap.droppedEventCount) == total
            }
            try PortTapTests.require(PortTap.droppedEventCount > 0, "the overload dropped nothing")
            try PortTapTests.require(balanced, "received \(received) + dropped \(PortTap.droppedEventCount) != \(total)")
            // The count reaches the sniffer: a later batch carries it.
            try port.send(msgid: 7, before: Date() + 2)
            _ = sniffer.receive(2, timeout: 5)
            try PortTapTests.require(sniffer.lastDropped == PortTap.droppedEventCount, "the drop count did not reach the sniffer")
            port.invalidate()
            worker.stop()
        }
        // What the child wrote before it failed (a trap with no message leaves this empty).
        if let result, result.exitStatus != .exitCode(EXIT_SUCCESS) {
            print("the child's standard error:", String(decoding: result.standardErrorContent, as: UTF8.self))
        }
    }

    @Test("S-TAP-1: a tapped process numbers its events from 1, in the order they reach a sniffer, with its start time: under overload the gaps between the numbers received are exactly the events dropped")
    func eventsAreNumbered() async {
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let sniffer = try RawSniffer(receiveHighWaterMark: 10)
            PortTapTests.smallBatches()
            try PortTap.enable(endpoint: sniffer.endpoint)
            let (worker, port, delivered) = try PortTapTests.servedPort("tap-numbered")
            let warmUps = try PortTapTests.warmUp(port, sniffer, delivered)
            // Everything before this point was received (and read) or dropped.
            let before = PortTap.producedEventCount
            let droppedBefore = PortTap.droppedEventCount
            try PortTapTests.require(before >= UInt64(2 * warmUps), "\(before) events numbered for \(warmUps) warm-up messages")
            let count = 20_000
            for index in 0..<count {
                try port.send(msgid: UInt32(index), components: [.data(Data(count: 32))], before: Date() + 2)
            }
            try PortTapTests.require(delivered.waitFor(count + warmUps))
            var numbers: [UInt64] = []
            var starts: Set<UInt64> = []
            func take(waiting timeout: Double) -> Int {
                let events = sniffer.receive(Int.max, timeout: timeout)
                for event in events {
                    numbers.append(event.seq)
                    starts.insert(event.started)
                }
                return events.count
            }
            // The overload's backlog first, until the tap has nothing more to pass on...
            while take(waiting: 0.3) > 0 {}
            // ...then a last message, whose two events mark the end.
            try port.send(msgid: 7, before: Date() + 2)
            let last = before + UInt64(2 * count + 2)
            let complete = waitUntil(timeout: 60) {
                _ = take(waiting: 0.05)
                return numbers.last == last
            }
            try PortTapTests.require(complete, "the last event (\(last)) never came; last received \(String(describing: numbers.last))")
            try PortTapTests.require(PortTap.producedEventCount == last, "produced \(PortTap.producedEventCount), expected \(last)")
            try PortTapTests.require(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "the numbers did not rise one event after another")
            try PortTapTests.require(numbers.first! > before, "an event numbered \(numbers.first!) came after the warm-up's \(before)")
            // Gaps: every number after the warm-up not received.
            let gaps = (last - before) - UInt64(numbers.count)
            let dropped = PortTap.droppedEventCount - droppedBefore
            try PortTapTests.require(dropped > 0, "the overload dropped nothing")
            try PortTapTests.require(gaps == dropped, "\(gaps) numbers missing, \(dropped) events dropped")
            try PortTapTests.require(starts == [ProcessIdentity.current.startTime], "start times \(starts)")
            port.invalidate()
            worker.stop()
        }
        // What the child wrote before it failed (a trap with no message leaves this empty).
        if let result, result.exitStatus != .exitCode(EXIT_SUCCESS) {
            print("the child's standard error:", String(decoding: result.standardErrorContent, as: UTF8.self))
        }
    }

    @Test("S-TAP-1: a slow reader (it pauses after each batch) gets what it can and counts the rest exactly: the gaps between the numbers it received are the events it missed, and received + missed = produced")
    func slowReaderAccountsExactly() async {
        await #expect(processExitsWith: .success) {
            let sniffer = try RawSniffer(receiveHighWaterMark: 4)
            PortTapTests.smallBatches()
            try PortTap.enable(endpoint: sniffer.endpoint)
            let (worker, port, delivered) = try PortTapTests.servedPort("tap-slow-reader")
            let warmUps = try PortTapTests.warmUp(port, sniffer, delivered)
            let before = PortTap.producedEventCount
            let count = 20_000
            DispatchQueue.global().async {
                for index in 0..<count { try? port.send(msgid: UInt32(index), components: [.data(Data(count: 16))], before: Date() + 5) }
            }
            // The reader's slowness is the point here, not a synchronisation:
            // 2 ms after every batch, while the sender floods.
            var numbers: [UInt64] = []
            let last = before + UInt64(2 * count)
            let complete = waitUntil(timeout: 120) {
                for event in sniffer.receive(1, timeout: 0.05) where event.seq > before { numbers.append(event.seq) }
                usleep(2_000)
                if numbers.last == last { return true }
                // Past the end of the traffic: the last events may have been missed; the counts say so.
                return delivered.waitFor(count + warmUps, timeout: 0) && PortTap.producedEventCount == last
                    && sniffer.receiveAll(timeout: 0.5).isEmpty
            }
            try PortTapTests.require(complete, "the traffic never ended")
            try PortTapTests.require(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "the numbers did not rise")
            let missed = (last - before) - UInt64(numbers.count)
            try PortTapTests.require(missed > 0, "a reader 2 ms behind every batch missed nothing")
            try PortTapTests.require(numbers.count > 0, "the slow reader got nothing")
            try PortTapTests.require(UInt64(numbers.count) + missed == PortTap.producedEventCount - before)
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
            var got: [[PortTapEvent]] = [first.receiveAll(timeout: 0.5), second.receiveAll(timeout: 0.5), []]
            // A third starts: the tap finds it in the directory and connects to it.
            let third = try RawSniffer(endpoint: PortTap.readerEndpoint())
            try PortTapTests.require(waitUntil(timeout: 10) { TapPipeline.shared.readerCount == 3 }, "the third reader was not connected")
            // The first leaves: the others go on as before.
            first.leave()
            try PortTapTests.require(waitUntil(timeout: 10) { TapPipeline.shared.readerCount == 2 }, "the first reader's socket was kept")
            try send(100)
            got[1] += second.receiveAll(timeout: 0.5)
            got[2] += third.receiveAll(timeout: 0.5)
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
            let events = sniffer.receive(2, timeout: 5)
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
