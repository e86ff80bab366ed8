// The port traffic tap and portsniff (issue: see port traffic live): every
// send and delivery reported, exactly; drops counted, never a blocked sender;
// a sniffer may start before or after the processes it watches.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Synchronization
import Testing
import ZeroMQ

@Suite("Port traffic tap and portsniff")
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

    // MARK: - portsniff with the demos (needs `swift build` first; scripts/test.sh does it)

    static let programsBuilt = SpawnedProgram.isBuilt("portsniff") && SpawnedProgram.isBuilt("pingpong") && SpawnedProgram.isBuilt("ipc-demo")

    @Test("portsniff --help shows `--count <N>`: value names say what an option takes, not the property behind it",
          .enabled(if: SpawnedProgram.isBuilt("portsniff"), "build the programs first: swift build (scripts/test.sh does)"))
    func helpValueNames() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let help = try SpawnedProgram("portsniff", ["--help"], in: directory)
        #expect(help.waitForExit() == 0)
        // ArgumentParser puts the value name in angle brackets; without
        // `valueName:` it would print the property's name (`--count <count>`).
        #expect(help.output.contains("--count <N>"), "\(help.output)")
    }

    @Test("portsniff --read of a file that is not a recording fails with a clear error and a non-zero status",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func readingGarbageFails() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = "\(directory)/garbage.txt"
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        _ = "this is not a recording\n".withCString { write(fd, $0, strlen($0)) }
        close(fd)
        let read = try SpawnedProgram("portsniff", ["--read", path], in: directory)
        let status = read.waitForExit(timeout: 30)
        #expect(status != nil && status != 0)
        #expect(read.errorOutput.contains("\(path):1: not a portsniff recording"), "\(read.errorOutput)")
    }

    @Test("S-TAP-1: portsniff counts the events it missed from the gaps in each process's numbers: a recording with numbers 5, 6 and 9 of one process reads as 3 received + 2 dropped of 5 owed",
          .enabled(if: SpawnedProgram.isBuilt("portsniff"), "build the programs first: swift build (scripts/test.sh does)"))
    func gapsAreCountedAsDrops() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = "\(directory)/gaps.jsonl"
        try writeRecording([UInt64(5), 6, 9].enumerated().map { index, seq in
            madeUpEvent(.send, seq: seq, index: index, msgid: UInt32(index))
        }, to: path)
        let read = try SpawnedProgram("portsniff", ["--read", path], in: directory)
        #expect(read.waitForExit(timeout: 30) == 0)
        #expect(read.errorOutput.contains("3 event(s) shown") && read.errorOutput.contains("2 tap event(s) dropped"), "\(read.errorOutput)")
        #expect(read.errorOutput.contains("pid 4242 (made-up): events 5-9 owed (5): 3 received + 2 dropped"), "\(read.errorOutput)")
    }

    @Test("portsniff's filters take globs and negation on port, process and thread names, and --kind selects sends, deliveries, failed sends or drops (also negated)",
          .enabled(if: SpawnedProgram.isBuilt("portsniff"), "build the programs first: swift build (scripts/test.sh does)"))
    func globFiltersAndKinds() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = directory + "/filters.jsonl"
        try writeRecording([
            madeUpEvent(.send, seq: 1, index: 1, thread: "worker-1", destination: "service-4242", msgid: 1),
            madeUpEvent(.deliver, seq: 2, index: 2, thread: "worker-2", destination: "service-4242", msgid: 1),
            madeUpEvent(.send, seq: 3, index: 3, thread: "dispatch-default", destination: "logger", msgid: 2),
            madeUpEvent(.messageDropped, seq: 4, index: 4, thread: "worker-1", destination: "logger", msgid: 3, reason: "no message handler"),
        ], to: path, sorted: true)
        func msgids(_ arguments: [String]) throws -> [String] {
            let read = try SpawnedProgram("portsniff", ["--read", path, "--json"] + arguments, in: directory)
            #expect(read.waitForExit(timeout: 30) == 0, "\(read.errorOutput)")
            return decodeEvents(read.output).map { "\($0.kind) \($0.msgid)" }
        }
        #expect(try msgids(["--port", "service-*"]) == ["send 1", "deliver 1"])
        #expect(try msgids(["--port", "!service-*"]) == ["send 2", "messageDropped 3"])
        #expect(try msgids(["--thread", "worker-?"]) == ["send 1", "deliver 1", "messageDropped 3"])
        #expect(try msgids(["--thread", "worker-*", "--thread", "!worker-2"]) == ["send 1", "messageDropped 3"])
        #expect(try msgids(["--process", "made-*", "--kind", "send"]) == ["send 1", "send 2"])
        #expect(try msgids(["--kind", "!send"]) == ["deliver 1", "messageDropped 3"])
        #expect(try msgids(["--process", "other"]) == [])
        let bad = try SpawnedProgram("portsniff", ["--read", path, "--kind", "sent"], in: directory)
        #expect(bad.waitForExit(timeout: 30) != 0 && bad.errorOutput.contains("--kind takes"), "\(bad.errorOutput)")
    }

    @Test("portsniff stamps lines as tcpdump's -t family: -t none, -tt seconds since 1970, -ttt the time since the previous line, -ttttt since the first (on the monotonic clock)",
          .enabled(if: SpawnedProgram.isBuilt("portsniff"), "build the programs first: swift build (scripts/test.sh does)"))
    func timestampFormats() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = directory + "/times.jsonl"
        // Events 1, 2 and 4 ms after a fixed instant.
        try writeRecording([1, 2, 4].enumerated().map { number, index in
            madeUpEvent(.send, seq: UInt64(number + 1), index: index, msgid: UInt32(number))
        }, to: path, sorted: true)
        func stamps(_ arguments: [String]) throws -> [String] {
            let read = try SpawnedProgram("portsniff", ["--read", path, "--no-color"] + arguments, in: directory)
            #expect(read.waitForExit(timeout: 30) == 0, "\(read.errorOutput)")
            return read.output.split(separator: "\n").map { String($0.split(separator: " ").first ?? "") }
        }
        #expect(try stamps(["-t"]) == ["4242", "4242", "4242"], "no time column: the pid comes first")
        #expect(try stamps(["-ttt"]) == ["0.000000", "0.001000", "0.002000"])
        #expect(try stamps(["-ttttt"]) == ["0.000000", "0.001000", "0.003000"])
        let epoch = try stamps(["--time", "epoch"])
        #expect(epoch.first == "1700001000.001000", "\(epoch)")
        let bad = try SpawnedProgram("portsniff", ["--read", path, "-t", "--time", "delta"], in: directory)
        #expect(bad.waitForExit(timeout: 30) != 0)
    }

    @Test("portsniff's socket file is 0600 while it listens, and removed when it stops (Ctrl-C)",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func snifferSocketFileIsPrivateAndRemoved() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let path = "\(directory)/tap.sock"
        let sniff = try SpawnedProgram("portsniff", ["--endpoint", "ipc://\(path)"], in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        var info = stat()
        #expect(stat(path, &info) == 0, "no socket file at \(path)")
        #expect(info.st_mode & 0o777 == 0o600, "mode \(String(info.st_mode & 0o777, radix: 8))")
        kill(sniff.pid, SIGINT)
        #expect(sniff.waitForExit(timeout: 30) != nil)
        #expect(access(path, F_OK) != 0, "the socket file was left behind")
    }

    @Test("S-TAP-1: two portsniffs at once, each on its own socket in the readers' directory, both get every event of pingpong under RUNLOOPKIT_TAP=1, numbered alike; their summaries say none was dropped",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func twoPortsniffsAtOnce() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let roundTrips = 200
        let sniffers = try (0..<2).map { _ in
            try SpawnedProgram("portsniff", ["--json", "--count", "\(4 * roundTrips)"], environment: runtime, in: directory)
        }
        for sniff in sniffers {
            #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        }
        // Two sockets of their own, in the readers' directory.
        #expect(Set(sniffers.map { $0.errorOutput }).count == 2)
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: runtime.merging(["RUNLOOPKIT_TAP": "1"]) { $1 }, in: directory)
        #expect(pingpong.waitForExit() == 0, "pingpong failed: \(pingpong.errorOutput)")
        var numbers: [[UInt64]] = []
        for sniff in sniffers {
            #expect(sniff.waitForExit(timeout: 30) == 0, "a portsniff did not see all \(4 * roundTrips) events: \(sniff.errorOutput)")
            numbers.append(decodeEvents(sniff.output).map(\.seq).sorted())
            #expect(sniff.errorOutput.contains("0 tap event(s) dropped"), "\(sniff.errorOutput)")
        }
        #expect(numbers[0] == Array(1...UInt64(4 * roundTrips)) && numbers[0] == numbers[1],
                "the two got \(numbers[0].count) and \(numbers[1].count) events")
    }

    @Test("S-TAP-1: a sniffer stopped (SIGSTOP) before the program starts and resumed after it exited accounts for every event exactly, from the program's count file: received + dropped = produced",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func stoppedSnifferAccountsExactly() throws {
        let (received, produced) = try Self.sniffStopped(roundTrips: 20_000, once: { _ in true })
        // Stopped, it could not even finish ZeroMQ's handshake: the tap could
        // pass nothing on, and says so.
        #expect(received < produced, "a stopped sniffer got all \(received) events")
    }

    @Test("S-TAP-1: a sniffer stopped (SIGSTOP) in the middle of the traffic and resumed after the program exited shows what waited for it and counts the rest as dropped: received + dropped = produced, exactly",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func snifferStoppedMidRunAccountsExactly() throws {
        let (received, produced) = try Self.sniffStopped(roundTrips: 50_000, once: { $0.output.contains("\"kind\"") })
        #expect(received > 0 && received < produced, "\(received) of \(produced) received")
    }

    /// Runs portsniff in the readers' directory of a private runtime
    /// directory, then pingpong with the tap on; stops portsniff (SIGSTOP)
    /// once `condition` holds of it, resumes it after pingpong exited and
    /// ends it (SIGINT). Checks pingpong's count file and that portsniff's
    /// summary adds up for it; returns the events received and produced.
    static func sniffStopped(roundTrips: Int, once condition: @escaping (SpawnedProgram) -> Bool) throws -> (received: Int, produced: Int) {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let sniff = try SpawnedProgram("portsniff", ["--json"], environment: runtime, in: directory)
        defer { sniff.killAndReap() }
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        let tapped = runtime.merging(["RUNLOOPKIT_TAP": "1"]) { $1 }
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: tapped, in: directory)
        #expect(waitUntil(timeout: 30) { condition(sniff) }, "portsniff never got to the point of being stopped")
        kill(sniff.pid, SIGSTOP)
        #expect(pingpong.waitForExit() == 0, "pingpong failed: \(pingpong.errorOutput)")
        let produced = 4 * roundTrips
        // The program is gone; its count file stays, and says it all.
        let counts = try #require(countFiles(in: directory + "/runtime").first { $0.pid == pingpong.pid })
        #expect(counts.exited && counts.produced == UInt64(produced) && counts.settled == counts.produced && counts.name == "pingpong")
        // Resumed, then ended at once: what waits in its socket is shown
        // first, then the summary.
        kill(sniff.pid, SIGCONT)
        kill(sniff.pid, SIGINT)
        #expect(sniff.waitForExit(timeout: 60) == 0)
        let received = decodeEvents(sniff.output).filter { $0.pid == pingpong.pid }.count
        let line = sniff.errorOutput.split(separator: "\n").first { $0.contains("pid \(pingpong.pid) (pingpong, exited)") }.map(String.init)
        #expect(line == "  pid \(pingpong.pid) (pingpong, exited): events 1-\(produced) owed (\(produced)): \(received) received + \(produced - received) dropped",
                "\(sniff.errorOutput)")
        return (received, produced)
    }

    /// The count files of a runtime directory's tapped processes.
    static func countFiles(in runtime: String) throws -> [PortTapCounts] {
        let directory = runtime + "/tap/counts"
        return try PortProcess.directoryEntries(directory).filter { $0.hasSuffix(".json") }.map { name in
            try JSONDecoder().decode(PortTapCounts.self, from: Data(SpawnedProgram.read(directory + "/" + name).utf8))
        }
    }

    @Test("portsniff shows events in time order (a reorder window), so that a DELIVER comes after its SEND and carries the latency: live, pingpong's events in time order; replayed, a recording written out of order comes out sorted",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func eventsInTimeOrder() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        // Live.
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let roundTrips = 500
        let sniff = try SpawnedProgram("portsniff", ["--json", "--count", "\(4 * roundTrips)"], environment: runtime, in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: runtime.merging(["RUNLOOPKIT_TAP": "1"]) { $1 }, in: directory)
        #expect(pingpong.waitForExit() == 0)
        #expect(sniff.waitForExit(timeout: 30) == 0)
        let lines = sniff.output.split(separator: "\n")
        let inOrder = lines.filter { !$0.contains("\"late\":true") }.compactMap { try? JSONDecoder().decode(PortTapEvent.self, from: Data($0.utf8)) }
        #expect(inOrder.count >= 4 * roundTrips - 10, "\(4 * roundTrips - inOrder.count) events came late")
        #expect(zip(inOrder, inOrder.dropFirst()).allSatisfy { $0.monotonicTime <= $1.monotonicTime }, "events out of time order")
        // The latency is on the DELIVER line of each pair, never on a SEND
        // (unless the SEND came later than the window: shown, marked late;
        // seen once under AddressSanitizer's load).
        #expect(lines.filter { $0.contains("\"latency_ns\"") && !$0.contains("\"late\":true") }.allSatisfy { $0.contains("\"kind\":\"deliver\"") })

        // Replayed: a recording whose DELIVER comes before its SEND.
        let path = directory + "/unordered.jsonl"
        try writeRecording([madeUpEvent(.deliver, seq: 2, index: 2, pid: 7, msgid: 5, trace: 0xab),
                            madeUpEvent(.send, seq: 1, index: 1, pid: 7, msgid: 5, trace: 0xab)], to: path)
        let replay = try SpawnedProgram("portsniff", ["--read", path, "--json"], in: directory)
        #expect(replay.waitForExit(timeout: 30) == 0)
        let replayed = replay.output.split(separator: "\n").map(String.init).dropFirst()  // the header line
        #expect(replayed.count == 2 && replayed.first!.contains("\"kind\":\"send\"") && replayed.last!.contains("\"kind\":\"deliver\"")
                && replayed.last!.contains("\"latency_ns\":1000000"), "\(replayed)")
    }

    @Test("portsniff -- COMMAND runs the program with the tap on, as strace does: every event of it, an exact summary, and portsniff exits with the program's status",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func runsACommand() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let roundTrips = 300
        let sniff = try SpawnedProgram("portsniff", ["--json", "--", SpawnedProgram.productsDirectory + "/pingpong", "--count", "\(roundTrips)"],
                                       environment: runtime, in: directory)
        #expect(sniff.waitForExit(timeout: 60) == 0, "\(sniff.errorOutput)")
        let events = decodeEvents(sniff.output)
        #expect(events.count == 4 * roundTrips)
        let pid = try #require(events.first?.pid)
        #expect(sniff.errorOutput.contains("pid \(pid) (pingpong, exited): events 1-\(4 * roundTrips) owed (\(4 * roundTrips)): \(4 * roundTrips) received + 0 dropped"),
                "\(sniff.errorOutput)")
        // The program's status is portsniff's.
        let failing = try SpawnedProgram("portsniff", ["--", "/bin/sh", "-c", "exit 3"], environment: runtime, in: directory)
        #expect(failing.waitForExit(timeout: 60) == 3, "\(failing.errorOutput)")
    }

    @Test("portsniff's live view above --max-rate lines a second prints one summary line a second instead of every event, while --write records every event and the summary counts them all",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func busyLiveViewSummarises() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let runtime = ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"]
        let roundTrips = 10_000
        let recording = directory + "/all.jsonl"
        let sniff = try SpawnedProgram(
            "portsniff", ["--max-rate", "100", "--write", recording, "--", SpawnedProgram.productsDirectory + "/pingpong", "--count", "\(roundTrips)"],
            environment: runtime, in: directory)
        #expect(sniff.waitForExit(timeout: 120) == 0, "\(sniff.errorOutput)")
        let lines = sniff.output.split(separator: "\n")
        let eventLines = lines.filter { $0.contains(" SEND ") || $0.contains(" DELIVER ") }
        let summaries = lines.filter { $0.contains("events/s") && $0.contains("over 100 lines/s") }
        #expect(!summaries.isEmpty, "no summary line: \(lines.prefix(5))")
        // Every event received is recorded and counted, shown or summarised
        // (a reader slowed down, as under ThreadSanitizer, may miss some: counted).
        let summary = try #require(sniff.errorOutput.split(separator: "\n").first { $0.contains("pid ") && $0.contains("owed") })
        let received = try #require(Int(summary.split(separator: ":").last!.split(separator: " ").first!))
        #expect(summary.hasSuffix("owed (\(4 * roundTrips)): \(received) received + \(4 * roundTrips - received) dropped"), "\(summary)")
        #expect(SpawnedProgram.read(recording).split(separator: "\n").count == 1 + received)
        #expect(eventLines.count < received / 2, "\(eventLines.count) event lines printed at a rate over the limit")
    }

    @Test("portsniff --json --count N records every message of pingpong, both directions, exactly",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func sniffPingpong() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let endpoint = "ipc://\(directory)/tap.sock"
        let roundTrips = 200
        let sniff = try SpawnedProgram("portsniff", ["--endpoint", endpoint, "--json", "--count", "\(4 * roundTrips)"], in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") }, "portsniff did not start: \(sniff.errorOutput)")
        let pingpong = try SpawnedProgram("pingpong", ["--count", "\(roundTrips)"], environment: ["RUNLOOPKIT_TAP": endpoint], in: directory)
        #expect(pingpong.waitForExit() == 0, "pingpong failed: \(pingpong.errorOutput)")
        #expect(sniff.waitForExit(timeout: 30) == 0, "portsniff did not see all \(4 * roundTrips) events: \(sniff.errorOutput)")

        let events = decodeEvents(sniff.output)
        #expect(events.count == 4 * roundTrips)
        // Pings are msgid 1, pongs msgid 2; the data's first 8 bytes are the
        // round trip's sequence number (the tap shows the first 16 bytes).
        func sequence(_ event: PortTapEvent) -> Int? {
            guard event.head.count >= 8 else { return nil }
            return event.head.prefix(8).reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        for kind in [PortTapEvent.Kind.send, .deliver] {
            for msgid: UInt32 in [1, 2] {
                let sequences = events.filter { $0.kind == kind && $0.msgid == msgid }.compactMap(sequence)
                #expect(sequences == Array(1...roundTrips), "\(kind) of msgid \(msgid): every round trip once, in order")
            }
        }
        // Both directions, on the right threads.
        #expect(events.filter { $0.kind == .deliver && $0.msgid == 1 }.allSatisfy { $0.thread == "pong" })
        #expect(events.filter { $0.kind == .deliver && $0.msgid == 2 }.allSatisfy { $0.thread == "ping" })
        #expect(events.filter { $0.kind == .send && $0.msgid == 1 }.allSatisfy { $0.thread == "ping" })
        #expect(events.filter { $0.kind == .send && $0.msgid == 2 }.allSatisfy { $0.thread == "pong" })
        let traces = Dictionary(grouping: events, by: { $0.trace ?? 0 })
        #expect(traces.count == 2 * roundTrips && traces.values.allSatisfy { Set($0.map(\.kind)) == [.send, .deliver] })
        #expect(events.allSatisfy { $0.pid == pingpong.pid && $0.process == "pingpong" })
        // Each pair gets its latency once, on its DELIVER line (or on a SEND later than the window).
        #expect(sniff.output.split(separator: "\n").filter { $0.contains("\"latency_ns\":") }.count == 2 * roundTrips,
                "every message seen at both ends shows its send-to-delivery latency once")
    }

    @Test("portsniff records the whole ipc-demo conversation between its two processes",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func sniffIPCDemo() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let endpoint = "ipc://\(directory)/tap.sock"
        // 4 requests and their 4 replies, and 3 notices: 11 messages, 22
        // events; and the send the demo shows failing (an inproc port to
        // another process), an event of its own.
        let sniff = try SpawnedProgram("portsniff", ["--endpoint", endpoint, "--json", "--count", "23"], in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") })
        let demo = try SpawnedProgram("ipc-demo", [], environment: ["RUNLOOPKIT_TAP": endpoint], in: directory)
        #expect(demo.waitForExit() == 0, "ipc-demo failed: \(demo.output)")
        #expect(sniff.waitForExit(timeout: 30) == 0, "portsniff did not see all 23 events: \(sniff.errorOutput)")

        let events = decodeEvents(sniff.output)
        #expect(events.count == 23)
        #expect(events.filter { $0.kind == .sendFailed }.map { "\($0.msgid) \($0.reason ?? "-")" } == ["2 componentNotTransferable"])
        let expected: [UInt32] = [1, 1, 2, 2, 3, 3, 99, 99, 101, 102, 103]
        #expect(events.filter { $0.kind == .send }.map(\.msgid).sorted() == expected)
        #expect(events.filter { $0.kind == .deliver }.map(\.msgid).sorted() == expected)
        // Both directions: requests are sent by the client and delivered in the server, replies the other way.
        let senders = Set(events.filter { $0.kind == .send }.map(\.pid)), receivers = Set(events.filter { $0.kind == .deliver }.map(\.pid))
        #expect(senders.count == 2 && senders == receivers)
        for event in events where event.kind == .send && [1, 2, 3, 99].contains(event.msgid) && event.destination.hasPrefix("ipc-demo-") {
            #expect(events.contains { $0.kind == .deliver && $0.trace == event.trace && $0.pid != event.pid })
        }
        #expect(Dictionary(grouping: events.filter { $0.trace != nil }, by: { $0.trace! }).values.allSatisfy { $0.count == 2 })
    }

    @Test("portsniff --read replays a --write recording through the same filters (--msgid, --pid) and views",
          .enabled(if: programsBuilt, "build the programs first: swift build (scripts/test.sh does)"))
    func recordAndReplay() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let endpoint = "ipc://\(directory)/tap.sock"
        let recording = directory + "/traffic.jsonl"
        // ipc-demo's 23 events (sniffIPCDemo).
        let sniff = try SpawnedProgram("portsniff", ["--endpoint", endpoint, "--count", "23", "--write", recording], in: directory)
        #expect(waitUntil(timeout: 30) { sniff.errorOutput.contains("listening on") })
        let demo = try SpawnedProgram("ipc-demo", [], environment: ["RUNLOOPKIT_TAP": endpoint], in: directory)
        #expect(demo.waitForExit() == 0)
        #expect(sniff.waitForExit(timeout: 30) == 0)
        #expect(sniff.output.split(separator: "\n").count == 23, "the live view prints one line per event")
        // The recording: a header line, then one event a line, no blank
        // line, keys in one (sorted) order, paths unescaped.
        let all = SpawnedProgram.read(recording).split(separator: "\n", omittingEmptySubsequences: false).dropLast()
        #expect(all.first == #"{"format":"portsniff-recording","sorted":true,"version":1,"window_ms":50}"#, "\(all.first ?? "")")
        let lines = all.dropFirst()
        #expect(lines.count == 23 && lines.allSatisfy { !$0.isEmpty }, "\(lines.count) lines, blank ones included")
        let keys = ["components", "data_bytes", "destination", "head_hex", "kind", "msgid", "pid", "port_components", "process",
                    "seq", "started_ticks", "thread", "tid", "time_monotonic_ns", "time_unix_ns", "version"].map { "\"\($0)\"" }
        for line in lines {
            // Each key after the one before it.
            var from = line.startIndex
            let inOrder = keys.allSatisfy { key in
                guard let found = line.range(of: key, range: from..<line.endIndex) else { return false }
                from = found.upperBound
                return true
            }
            #expect(inOrder, "keys out of order: \(line)")
            #expect(!line.contains("\\/"), "an escaped slash: \(line)")
        }

        let replay = try SpawnedProgram("portsniff", ["--read", recording, "--json", "--msgid", "99"], in: directory)
        #expect(replay.waitForExit() == 0)
        let shutdown = decodeEvents(replay.output)
        #expect(shutdown.count == 4 && shutdown.allSatisfy { $0.msgid == 99 })
        let serverPid = try #require(shutdown.first { $0.kind == .deliver }?.pid)
        let onlyServer = try SpawnedProgram("portsniff", ["--read", recording, "--json", "--pid", "\(serverPid)", "--msgid", "99"], in: directory)
        #expect(onlyServer.waitForExit() == 0)
        #expect(decodeEvents(onlyServer.output).map(\.kind).sorted { $0.rawValue < $1.rawValue } == [.deliver, .send])
        let stats = try SpawnedProgram("portsniff", ["--read", recording, "--stats"], in: directory)
        #expect(stats.waitForExit() == 0)
        #expect(stats.output.contains("MSG/S") && stats.output.contains("P99") && stats.output.contains("ipc-demo-"))
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
