// Ports within one process: S-PORT-1 to S-PORT-5. The cross-process parts
// (ipc between processes, names, peer death) are in PortIPCTests,
// PortNameServerTests and PeerDeathTests; requests in PortRequestTests; the
// bytes on the wire in WireFormatTests; bad input in PortMalformedInputTests.
import Dispatch
import Glibc
import Synchronization
import Testing
import ZeroMQ
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("Ports in one process (S-PORT-1 to S-PORT-5)")
struct PortTests {
    // MARK: - S-PORT-1

    @Test("S-PORT-1: a scheduled port delivers each message to its handler on its loop's thread; any thread can send",
          arguments: [RunLoop.Mode.default, .common])
    func deliversOnLoopThread(mode: RunLoop.Mode) throws {
        let fixture = try InboxPort("p1-deliver", mode: mode)
        defer { fixture.close() }
        let (thread, port, inbox) = (fixture.thread, fixture.port, fixture.inbox)

        try port.send(msgid: 1, before: portDeadline())  // the test's thread
        for sender: UInt32 in 2...4 {  // three threads of their own
            try onNewThread { try port.send(msgid: sender, before: portDeadline()) }
        }
        try thread.performAndWait { try port.send(msgid: 5, before: portDeadline()) }  // the receiving loop's thread
        #expect(inbox.waitForCount(5))
        #expect(Set(inbox.msgids) == [1, 2, 3, 4, 5])
        let loopThreadID = try #require(thread.threadID)
        #expect(inbox.all.allSatisfy { $0.threadID == loopThreadID }, "\(inbox.all.map(\.threadID)) vs \(loopThreadID)")
        #expect(inbox.all.allSatisfy { $0.mode == .default })
    }

    @Test("S-PORT-1, S-MODE-2: a port scheduled in two modes delivers only while its loop runs one of them; messages wait meanwhile and none is lost")
    func deliversOnlyInItsModes() throws {
        let (thread, loop) = try makePortLoopThread("p1-modes")
        defer { thread.stop() }
        let modeA = RunLoop.Mode("p1.mode-a")
        let modeB = RunLoop.Mode("p1.mode-b")
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let inbox = PortInbox()
        port.setMessageHandler(inbox.handler)
        try port.schedule(in: loop, forMode: modeA)
        try port.schedule(in: loop, forMode: modeB)

        /// On the loop's thread: runs `mode` until `count` messages in all arrived.
        func run(_ mode: RunLoop.Mode, until count: Int) throws {
            try thread.performAndWait {
                let deadline = MonotonicClock.instant(secondsFromNow: 10)
                while inbox.count < count && MonotonicClock.now() < deadline {
                    RunLoop.current.run(mode: mode, seconds: 1, returnAfterSourceHandled: true)
                }
            }
        }

        for msgid: UInt32 in 1...3 { try port.send(msgid: msgid, before: portDeadline()) }
        // The LoopThread runs its default mode: round trips through it give
        // it passes, and still nothing is delivered.
        for _ in 0..<5 { try thread.performAndWait {} }
        #expect(inbox.count == 0)
        try run(modeA, until: 3)
        #expect(inbox.msgids == [1, 2, 3])

        for msgid: UInt32 in 4...5 { try port.send(msgid: msgid, before: portDeadline()) }
        for _ in 0..<5 { try thread.performAndWait {} }
        #expect(inbox.count == 3)
        try run(modeB, until: 5)
        #expect(inbox.msgids == [1, 2, 3, 4, 5])
        #expect(inbox.all.map(\.mode) == [modeA, modeA, modeA, modeB, modeB])

        // Removed from mode B: mode B is empty again (S-RUN-1), the message waits for mode A.
        port.remove(from: loop, forMode: modeB)
        try port.send(msgid: 6, before: portDeadline())
        let resultInB = try thread.performAndWait { RunLoop.current.run(mode: modeB, seconds: 5) }
        #expect(resultInB == .finished)
        #expect(inbox.count == 5)
        try run(modeA, until: 6)
        #expect(inbox.msgids == [1, 2, 3, 4, 5, 6])
        let loopThreadID = try #require(thread.threadID)
        #expect(inbox.all.allSatisfy { $0.threadID == loopThreadID })
    }

    @Test("S-PORT-1: a port scheduled on one loop cannot be scheduled on another (.scheduledOnAnotherLoop); it keeps receiving on the first, in any of its modes, until removed from all of them")
    func secondLoopRefused() throws {
        let (first, firstLoop) = try makePortLoopThread("p1-first")
        defer { first.stop() }
        let (second, secondLoop) = try makePortLoopThread("p1-second")
        defer { second.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let inbox = PortInbox()
        port.setMessageHandler(inbox.handler)
        try port.schedule(in: firstLoop, forMode: .default)

        #expect(portErrorThrown { try port.schedule(in: secondLoop, forMode: .default) }?.caseName == "scheduledOnAnotherLoop")
        #expect(portErrorThrown { try port.schedule(in: secondLoop, forMode: "p1.other") }?.caseName == "scheduledOnAnotherLoop")
        try port.schedule(in: firstLoop, forMode: "p1.other")  // another mode of the same loop is fine

        try port.send(msgid: 9, before: portDeadline())
        #expect(inbox.waitForCount(1))
        #expect(inbox.all.map(\.threadID) == [try #require(first.threadID)])

        // Removed from every mode of the first loop, it may move to another
        // (NSPort removeFromRunLoop, then scheduleInRunLoop); what waits goes along.
        port.remove(from: firstLoop, forMode: .default)
        port.remove(from: firstLoop, forMode: "p1.other")
        try port.send(msgid: 10, before: portDeadline())
        try port.schedule(in: secondLoop, forMode: .default)
        #expect(inbox.waitForCount(2))
        #expect(inbox.msgids == [9, 10])
        #expect(inbox.all.map(\.threadID) == [try #require(first.threadID), try #require(second.threadID)])
        #expect(portErrorThrown { try port.schedule(in: firstLoop, forMode: .default) }?.caseName == "scheduledOnAnotherLoop")
    }

    @Test("S-PORT-1: two threads scheduling one port on two loops at the same moment: one succeeds, the other gets .scheduledOnAnotherLoop, nothing traps")
    func concurrentSchedulingOnTwoLoops() async {
        // In a child process: a trap must fail this test, not end the run.
        await #expect(processExitsWith: .success) {
            PortTests.raceToSchedule(rounds: 3000)
        }
    }

    /// The race itself, in the exit test's child: exits 1 with a report on a wrong outcome.
    static func raceToSchedule(rounds: Int) {
        do {
            let loops = try [makePortLoopThread("p1-race-a"), makePortLoopThread("p1-race-b")]
            let current = Locked<Port?>(nil)
            let round = Atomic<Int>(0)
            let outcomes = Locked<[String]>([])
            let finished = DispatchSemaphore(value: 0)
            let racers = (0..<2).map { index in
                SpawnedThread {
                    for number in 1...rounds {
                        while round.load(ordering: .acquiring) < number { sched_yield() }
                        let port = current.value!
                        let outcome = portErrorThrown { try port.schedule(in: loops[index].loop, forMode: .default) }
                        outcomes.withLock { $0.append(outcome?.caseName ?? "scheduled") }
                        finished.signal()
                    }
                }
            }
            for number in 1...rounds {
                current.value = try Port(transport: .inproc)
                round.store(number, ordering: .releasing)
                for _ in 0..<2 {
                    guard finished.wait(timeout: .now() + 30) == .success else { throw TestFailure("round \(number) hung") }
                }
                let seen = outcomes.withLock { outcomes in
                    defer { outcomes.removeAll() }
                    return outcomes.sorted()
                }
                guard seen == ["scheduled", "scheduledOnAnotherLoop"] else {
                    throw TestFailure("round \(number): \(seen)")
                }
                current.value?.invalidate()
            }
            for racer in racers { try racer.join() }
            for (thread, _) in loops { thread.stop() }
        } catch {
            reportToParent("S-PORT-1 race: \(error)")
            exit(1)
        }
    }

    @Test("S-PORT-1: a send right cannot be scheduled nor stream messages (.notLocal)")
    func sendRightCannotReceive() throws {
        let (thread, loop) = try makePortLoopThread("p1-sendright")
        defer { thread.stop() }
        // What a descriptor of another process's port resolves to.
        let remote = Port(sendRightTo: PortAddress(pid: 1, startTime: 1, portID: 1, ipcPath: "/nonexistent/p1-1.sock"))
        #expect(!remote.isLocal)
        #expect(remote.transport == .ipc)
        #expect(portErrorThrown { try remote.schedule(in: loop, forMode: .default) }?.caseName == "notLocal")
        #expect(portErrorThrown { _ = try remote.messages() }?.caseName == "notLocal")

        // What a descriptor of a port of this process that is gone resolves to.
        var local: Port? = try Port(transport: .inproc)
        let address = try #require(local).address
        local = nil
        let gone = Port.resolve(address)
        #expect(!gone.isLocal)
        #expect(!gone.isValid)
        #expect(portErrorThrown { try gone.schedule(in: loop, forMode: .default) }?.caseName == "notLocal")
    }

    // MARK: - S-PORT-2

    @Test("S-PORT-2: msgid, data components (empty, small, 1 MB), port components and the reply port arrive intact; sendPort is the receiving port")
    func messageArrivesIntact() throws {
        let (thread, loop) = try makePortLoopThread("p2-intact")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        let other = try Port(transport: .inproc)
        let ipcPort = try Port(transport: .ipc)
        let replies = try Port(transport: .inproc)
        defer { for each in [port, other, ipcPort, replies] { each.invalidate() } }
        let inbox = PortInbox()
        port.setMessageHandler(inbox.handler)
        try port.schedule(in: loop, forMode: .default)

        // PortMessage.Component has two cases, .data and .port: nothing else
        // can be put in a message, which the compiler enforces (S-PORT-2).
        let megabyte = Data((0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) })
        let components: [PortMessage.Component] = [
            .data(Data()), .data(Data("hello".utf8)), .port(other), .data(megabyte), .port(ipcPort), .data(Data([0])),
        ]
        try port.send(msgid: .max, components: components, replyPort: replies, before: portDeadline())
        try port.send(msgid: 0, before: portDeadline())
        try PortMessage(msgid: 77, components: [.port(port)], sendPort: port).send(before: portDeadline())
        #expect(inbox.waitForCount(3))
        let received = inbox.messages
        try #require(received.count == 3)

        let first = received[0]
        #expect(first.msgid == .max)
        #expect(first.components.count == components.count)
        #expect(first.dataComponents == [Data(), Data("hello".utf8), megabyte, Data([0])])
        #expect(first.components == components)
        if case let .port(arrived)? = first.components.dropFirst(2).first { #expect(arrived === other) } else { Issue.record("component 2 is not a port") }
        if case let .port(arrived)? = first.components.dropFirst(4).first {
            #expect(arrived === ipcPort)
            #expect(arrived.transport == .ipc)
        } else {
            Issue.record("component 4 is not a port")
        }
        #expect(first.replyPort === replies)
        // S-PORT-3, as NSPortMessage documents for a received message.
        #expect(first.sendPort === replies, "sendPort is where replies go")
        #expect(first.receivePort === port, "receivePort is the port it arrived on")
        #expect(first.isIncoming)

        let second = received[1]
        #expect(second.msgid == 0)
        #expect(second.components.isEmpty)
        #expect(second.replyPort == nil && second.sendPort == nil)
        #expect(second.receivePort === port)

        let third = received[2]
        #expect(third.msgid == 77)
        if case let .port(arrived)? = third.components.first { #expect(arrived === port) } else { Issue.record("no port component") }
        #expect(port.droppedMessageCount == 0)
    }

    @Test("S-PORT-2: what a handler keeps (a message, or one of its Data) stays as it arrived while later messages reuse the receiver's buffers; components change kind and number from message to message")
    func keptComponentsStayIntact() throws {
        // The receiver refills the last message's buffers in place once its
        // handler has let them go (docs/performance.md); this proves that it
        // never writes over bytes someone still holds.
        @Sendable func bytes(_ seed: UInt32, _ count: Int = 64) -> Data {
            Data((0..<count).map { UInt8(truncatingIfNeeded: Int(seed) &* 7 &+ $0) })
        }
        let other = try Port(transport: .inproc)
        defer { other.invalidate() }
        // msgid → what it carries; every third keeps its Data, every fifth the whole message.
        @Sendable func components(_ msgid: UInt32) -> [PortMessage.Component] {
            switch msgid % 4 {
            case 0: [.data(bytes(msgid))]
            case 1: [.data(bytes(msgid)), .data(bytes(msgid &+ 1000))]
            case 2: [.port(other), .data(bytes(msgid))]
            default: [.data(bytes(msgid, 65))]
            }
        }
        let seen = Locked<(delivered: Int, mismatches: [UInt32], keptData: [(UInt32, Data)], keptMessages: [PortMessage])>((0, [], [], []))
        try onNewThread {
            let port = try Port(transport: .inproc)
            port.setMessageHandler { message in
                seen.withLock { state in
                    state.delivered += 1
                    if message.components != components(message.msgid) { state.mismatches.append(message.msgid) }
                    if message.msgid % 3 == 0, case let .data(data)? = message.components.last {
                        state.keptData.append((message.msgid, data))
                    }
                    if message.msgid % 5 == 0 { state.keptMessages.append(message) }
                }
            }
            try port.schedule(in: RunLoop.current, forMode: .default)
            for msgid in UInt32(1)...200 { try port.send(msgid: msgid, components: components(msgid), before: portDeadline()) }
            let deadline = portDeadline()
            while seen.withLock({ $0.delivered }) < 200, Date() < deadline { _ = RunLoop.current.run(mode: .default, seconds: 0.1) }
            port.invalidate()
        }
        seen.withLock { state in
            #expect(state.delivered == 200)
            #expect(state.mismatches.isEmpty, "handlers saw wrong components for \(state.mismatches)")
            #expect(state.keptData.count == 66)
            for (msgid, data) in state.keptData {
                #expect(data == components(msgid).last.map { if case let .data(d) = $0 { d } else { Data() } }, "kept data of \(msgid)")
            }
            #expect(state.keptMessages.count == 40)
            for message in state.keptMessages {
                #expect(message.components == components(message.msgid), "kept message \(message.msgid)")
            }
        }
    }

    @Test("S-PORT-2: past the limits (257 components, a 64 MiB + 1 frame, 320 MiB in all) send throws .messageTooLarge and sends nothing; 256 components arrive")
    func limits() throws {
        let fixture = try InboxPort("p2-limits")
        defer { fixture.close() }
        let (port, inbox) = (fixture.port, fixture.inbox)

        let tooMany = Array(repeating: PortMessage.Component.data(Data([1])), count: WireFormat.maxComponents + 1)
        #expect(portErrorThrown { try port.send(msgid: 1, components: tooMany, before: portDeadline()) }?.caseName == "messageTooLarge")
        let tooManyPorts = Array(repeating: PortMessage.Component.port(port), count: WireFormat.maxComponents + 1)
        #expect(portErrorThrown { try port.send(msgid: 1, components: tooManyPorts, before: portDeadline()) }?.caseName == "messageTooLarge")
        let bigFrame = Data(count: WireFormat.maxFrameBytes + 1)  // calloc'd: costs no memory until touched
        #expect(portErrorThrown { try port.send(msgid: 1, components: [.data(bigFrame)], before: portDeadline()) }?.caseName == "messageTooLarge")
        let fullFrame = Data(count: WireFormat.maxFrameBytes)
        let tooMuch = Array(repeating: PortMessage.Component.data(fullFrame), count: 5)
        #expect(portErrorThrown { try port.send(msgid: 1, components: tooMuch, before: portDeadline()) }?.caseName == "messageTooLarge")

        let most = (0..<WireFormat.maxComponents).map { index in
            index.isMultiple(of: 16) ? PortMessage.Component.port(port) : .data(Data([UInt8(truncatingIfNeeded: index)]))
        }
        try port.send(msgid: 2, components: most, before: portDeadline())
        #expect(inbox.waitForCount(1))
        #expect(inbox.msgids == [2])
        #expect(inbox.messages.first?.components == most)
        #expect(port.droppedMessageCount == 0)
    }

    @Test("S-PORT-2, S-PORT-4: frames adding up to exactly 256 MiB arrive; 256 MiB of data plus its header is refused at send time, never dropped by the receiver")
    func totalSizeBoundary() throws {
        let (thread, loop) = try makePortLoopThread("p2-total")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let sizes = Locked<[[Int]]>([])
        let arrived = DispatchSemaphore(value: 0)
        port.setMessageHandler { message in  // keeps only the sizes, not 256 MiB
            sizes.withLock { $0.append([Int(message.msgid)] + message.dataComponents.map(\.count)) }
            arrived.signal()
        }
        try port.schedule(in: loop, forMode: .default)
        try port.send(msgid: 1, before: portDeadline())
        #expect(arrived.wait(timeout: .now() + 30) == .success)

        // docs/wire-format.md: "all frames of one message together: 268,435,456 bytes".
        let headerSize = WireFormat.headerFixedSize + 4
        let frame = Data(count: WireFormat.maxFrameBytes)
        let overLimit = Array(repeating: PortMessage.Component.data(frame), count: 4)  // 256 MiB of data + 16 header bytes
        let error = portErrorThrown { try port.send(msgid: 2, components: overLimit, before: portDeadline(30)) }
        #expect(error?.caseName == "messageTooLarge", "a message the receiver must drop was accepted")
        let last = Data(count: WireFormat.maxFrameBytes - headerSize)
        try port.send(msgid: 3, components: [.data(frame), .data(frame), .data(frame), .data(last)], before: portDeadline(30))
        #expect(arrived.wait(timeout: .now() + 60) == .success)
        let expected = [3, WireFormat.maxFrameBytes, WireFormat.maxFrameBytes, WireFormat.maxFrameBytes, last.count]
        #expect(sizes.value == [[1], expected])
        #expect(port.droppedMessageCount == 0)
    }

    // MARK: - S-PORT-3

    @Test("S-PORT-3: a port sent as a component or as the reply port arrives as the very same object, and what is sent to it reaches the original")
    func portsTravelAsSendRights() throws {
        let (serverThread, serverLoop) = try makePortLoopThread("p3-server")
        defer { serverThread.stop() }
        let (clientThread, clientLoop) = try makePortLoopThread("p3-client")
        defer { clientThread.stop() }
        let server = try Port(transport: .inproc)
        let replies = try Port(transport: .inproc)
        let extra = try Port(transport: .inproc)
        defer { for each in [server, replies, extra] { each.invalidate() } }
        let seen = Locked<[String]>([])
        server.setMessageHandler { message in
            guard case let .port(component)? = message.components.first, let reply = message.replyPort else {
                seen.withLock { $0.append("no port arrived") }
                return
            }
            seen.withLock { $0.append(reply === replies && component === extra ? "same objects" : "other objects") }
            do {
                try reply.send(msgid: message.msgid + 100, components: [.data(Data("reply".utf8))], before: portDeadline())
                try component.send(msgid: message.msgid + 200, before: portDeadline())
            } catch {
                seen.withLock { $0.append("send failed: \(error)") }
            }
        }
        let replyInbox = PortInbox()
        let extraInbox = PortInbox()
        replies.setMessageHandler(replyInbox.handler)
        extra.setMessageHandler(extraInbox.handler)
        try server.schedule(in: serverLoop, forMode: .default)
        try replies.schedule(in: clientLoop, forMode: .default)
        try extra.schedule(in: clientLoop, forMode: .default)

        try server.send(msgid: 1, components: [.port(extra)], replyPort: replies, before: portDeadline())
        #expect(replyInbox.waitForCount(1))
        #expect(extraInbox.waitForCount(1))
        #expect(seen.value == ["same objects"])
        #expect(replyInbox.msgids == [101])
        #expect(replyInbox.messages.first?.dataComponents == [Data("reply".utf8)])
        #expect(replyInbox.messages.first?.receivePort === replies)
        #expect(extraInbox.msgids == [201])
        let clientThreadID = try #require(clientThread.threadID)
        #expect((replyInbox.all + extraInbox.all).allSatisfy { $0.threadID == clientThreadID })
    }

    @Test("S-PORT-3, S-PORT-5: a well-formed descriptor of a port that no longer exists arrives as an invalid port; sending to it fails with .invalidPort")
    func descriptorOfGonePort() throws {
        let fixture = try InboxPort("p3-gone")
        defer { fixture.close() }
        let (port, inbox) = (fixture.port, fixture.inbox)
        var gone: Port? = try Port(transport: .inproc)
        let descriptor = RawWire.descriptor(of: try #require(gone))
        gone = nil

        let peer = try RawPortPeer(endpoint: port.address.inprocEndpoint)
        try peer.send([RawWire.header(flags: 1, msgid: 5, kinds: [1]), descriptor, descriptor])
        #expect(inbox.waitForCount(1))
        let message = try #require(inbox.messages.first)
        guard case let .port(component)? = message.components.first, let reply = message.replyPort else {
            Issue.record("the ports did not arrive: \(message)")
            return
        }
        #expect(!component.isValid)
        #expect(!reply.isValid)
        #expect(portErrorThrown { try component.send(msgid: 1, before: portDeadline()) }?.caseName == "invalidPort")
        #expect(portErrorThrown { try port.send(msgid: 1, replyPort: reply, before: portDeadline()) }?.caseName == "componentNotTransferable")
        #expect(port.droppedMessageCount == 0)
    }

    // MARK: - S-PORT-4

    enum Blocker: String, CaseIterable, Sendable {
        case notScheduled
        case loopBusy
    }

    @Test("S-PORT-4: when the queue is full a send waits until its deadline, then throws .timedOut; every accepted message arrives once, in order",
          arguments: Blocker.allCases)
    func fullQueueTimesOutAndLosesNothing(blocker: Blocker) throws {
        let (thread, loop) = try makePortLoopThread("p4-full")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let inbox = PortInbox()
        port.setMessageHandler(inbox.handler)
        let busy = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        if blocker == .loopBusy {
            try port.schedule(in: loop, forMode: .default)
            try thread.perform {
                busy.signal()
                _ = release.wait(timeout: .now() + 60)
            }
            #expect(busy.wait(timeout: .now() + 10) == .success)
        }

        let (accepted, failedAfter) = try fillUntilTimeout(port, wait: 0.05)
        #expect(accepted > 0)
        #expect(failedAfter >= 0.03, "the send failed after \(failedAfter) s without waiting for room")
        let start = MonotonicClock.now()
        #expect(portErrorThrown { try port.send(msgid: 0xDEAD, before: portDeadline(0.2)) }?.caseName == "timedOut")
        #expect(MonotonicClock.seconds(MonotonicClock.now() - start) >= 0.15)
        #expect(inbox.count == 0)

        // A send that waits with a long deadline goes through once there is room.
        let waiter = SpawnedThread { try port.send(msgid: 0xAAAA, before: portDeadline(60)) }
        if blocker == .loopBusy { release.signal() } else { try port.schedule(in: loop, forMode: .default) }
        try waiter.join()
        try port.send(msgid: 0xFFFF, before: portDeadline())
        #expect(inbox.waitForMsgid(0xFFFF))
        #expect(inbox.msgids == Array(0..<UInt32(accepted)) + [0xAAAA, 0xFFFF])
        #expect(port.droppedMessageCount == 0)
    }

    @Test("S-PORT-4: 4 threads × 50,000 messages into one port: each arrives exactly once, in order per sender")
    func manyProducersNoLossInOrder() throws {
        let producers = 4
        let perProducer = 50_000
        let total = producers * perProducer
        let (thread, loop) = try makePortLoopThread("p4-many")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        struct Tally {
            var next: [UInt32]
            var received = 0
            var problems: [String] = []
        }
        let tally = Locked(Tally(next: Array(repeating: 0, count: producers)))
        let done = DispatchSemaphore(value: 0)
        port.setMessageHandler { message in
            let producer = Int(message.msgid)
            let fields = message.dataComponents.first.map { data in
                data.withUnsafeBytes { ($0.loadUnaligned(fromByteOffset: 0, as: UInt32.self), $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self)) }
            }
            let finished = tally.withLock { tally -> Bool in
                tally.received += 1
                if let (sender, sequence) = fields, producer < producers, sender == producer, message.dataComponents[0].count == 8 {
                    if sequence != tally.next[producer], tally.problems.count < 20 {
                        tally.problems.append("producer \(producer): \(sequence) arrived, \(tally.next[producer]) expected")
                    }
                    tally.next[producer] = sequence + 1
                } else if tally.problems.count < 20 {
                    tally.problems.append("malformed: \(message)")
                }
                return tally.received == total
            }
            if finished { done.signal() }
        }
        try port.schedule(in: loop, forMode: .default)

        let senders = (0..<producers).map { producer in
            SpawnedThread(named: "p4-producer-\(producer)") {
                var payload = Data(count: 8)
                for sequence in 0..<UInt32(perProducer) {
                    payload.withUnsafeMutableBytes { bytes in
                        bytes.storeBytes(of: UInt32(producer), toByteOffset: 0, as: UInt32.self)
                        bytes.storeBytes(of: sequence, toByteOffset: 4, as: UInt32.self)
                    }
                    try port.send(msgid: UInt32(producer), components: [.data(payload)], before: portDeadline(60))
                }
            }
        }
        for sender in senders { try sender.join(timeout: 300) }
        #expect(done.wait(timeout: .now() + 120) == .success)
        try thread.performAndWait {}  // anything after the last message would have been handled before this
        let result = tally.value
        #expect(result.received == total)
        #expect(result.next == Array(repeating: UInt32(perProducer), count: producers))
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(port.droppedMessageCount == 0)
    }

    // MARK: - S-PORT-5

    @Test("S-PORT-5: invalidate() tells each invalidation handler once (also when four threads invalidate at once); a handler added afterwards runs at once; sends and scheduling then fail")
    func invalidateNotifiesOnce() throws {
        let port = try Port(transport: .inproc)
        let calls = Locked<[String]>([])
        port.addInvalidationHandler { [weak port] invalid in calls.withLock { $0.append("first \(invalid === port)") } }
        let removed = port.addInvalidationHandler { _ in calls.withLock { $0.append("removed") } }
        port.addInvalidationHandler { _ in calls.withLock { $0.append("second") } }
        port.removeInvalidationHandler(removed)
        #expect(port.isValid)
        #expect(calls.value.isEmpty)

        let go = DispatchSemaphore(value: 0)
        let invalidators = (0..<4).map { _ in
            SpawnedThread {
                _ = go.wait(timeout: .now() + 10)
                port.invalidate()
            }
        }
        for _ in invalidators { go.signal() }
        for invalidator in invalidators { try invalidator.join() }
        port.invalidate()
        #expect(!port.isValid)
        #expect(calls.value.sorted() == ["first true", "second"])

        let caller = ThreadIdentity.currentTID
        let ranOn = Locked<Int32?>(nil)
        port.addInvalidationHandler { _ in ranOn.value = ThreadIdentity.currentTID }
        #expect(ranOn.value == caller, "a handler added to an invalid port runs at once, on the caller's thread")

        let (thread, loop) = try makePortLoopThread("p5-invalid")
        defer { thread.stop() }
        #expect(portErrorThrown { try port.send(msgid: 1, before: portDeadline()) }?.caseName == "invalidPort")
        #expect(portErrorThrown { try port.schedule(in: loop, forMode: .default) }?.caseName == "invalidPort")
        #expect(portErrorThrown { _ = try port.messages() }?.caseName == "invalidPort")
        #expect(calls.value.count == 2)
    }

    @Test("S-PORT-5: invalidating a scheduled port stops its deliveries; its loop keeps serving other ports")
    func invalidateScheduledPort() throws {
        let (thread, loop) = try makePortLoopThread("p5-scheduled")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        let neighbour = try Port(transport: .inproc)
        defer { neighbour.invalidate() }
        let inbox = PortInbox()
        port.setMessageHandler(inbox.handler)
        neighbour.setMessageHandler(inbox.handler)
        try port.schedule(in: loop, forMode: .default)
        try neighbour.schedule(in: loop, forMode: .default)
        try port.send(msgid: 1, before: portDeadline())
        #expect(inbox.waitForMsgid(1))

        let told = Locked<[Int32]>([])
        port.addInvalidationHandler { _ in told.withLock { $0.append(ThreadIdentity.currentTID) } }
        port.invalidate()
        #expect(told.value == [ThreadIdentity.currentTID], "handlers run on the invalidating thread")
        #expect(portErrorThrown { try port.send(msgid: 2, before: portDeadline()) }?.caseName == "invalidPort")
        try neighbour.send(msgid: 3, before: portDeadline())
        #expect(inbox.waitForMsgid(3))
        #expect(inbox.msgids == [1, 3])
    }

    @Test("S-PORT-5: invalidating a port fails a send that waits for room in it with .invalidPort, long before the send's deadline")
    func invalidateFailsWaitingSend() throws {
        let port = try Port(transport: .inproc)
        _ = try fillUntilTimeout(port)
        let senderThread = Locked<Int32>(0)
        let sender = SpawnedThread { () throws -> (String?, Double) in
            senderThread.value = ThreadIdentity.currentTID
            let start = MonotonicClock.now()
            do {
                try port.send(msgid: 1, before: portDeadline(30))
                return (nil, MonotonicClock.seconds(MonotonicClock.now() - start))
            } catch let error as PortError {
                return (error.caseName, MonotonicClock.seconds(MonotonicClock.now() - start))
            }
        }
        // Safety net, not synchronisation: invalidate once the sender sleeps
        // waiting for room (it would fail the same way if it came later).
        waitUntil(timeout: 5) { senderThread.value != 0 && threadIsSleeping(senderThread.value) }
        port.invalidate()
        let (error, elapsed) = try sender.join()
        #expect(error == "invalidPort")
        #expect(elapsed < 10)
    }

    @Test("S-PORT-5: an invalid port cannot be sent as a component or reply port (.componentNotTransferable); nothing is sent")
    func invalidPortNotTransferable() throws {
        let fixture = try InboxPort("p5-transfer")
        defer { fixture.close() }
        let (port, inbox) = (fixture.port, fixture.inbox)
        let dead = try Port(transport: .inproc)
        dead.invalidate()

        #expect(portErrorThrown { try port.send(msgid: 1, components: [.port(dead)], before: portDeadline()) }?.caseName == "componentNotTransferable")
        #expect(portErrorThrown { try port.send(msgid: 2, components: [.data(Data([1])), .port(dead)], before: portDeadline()) }?.caseName == "componentNotTransferable")
        #expect(portErrorThrown { try port.send(msgid: 3, replyPort: dead, before: portDeadline()) }?.caseName == "componentNotTransferable")
        try port.send(msgid: 4, before: portDeadline())
        #expect(inbox.waitForMsgid(4))
        #expect(inbox.msgids == [4])
    }

    @Test("S-PORT-5: dropping the last reference to a scheduled local port closes it: its ipc socket file goes, its descriptor resolves to an invalid port, its endpoint is free")
    func droppingLastReferenceCloses() throws {
        let (thread, loop) = try makePortLoopThread("p5-drop")
        defer { thread.stop() }
        let delivered = Counter()
        var port: Port? = try Port(transport: .ipc)
        weak let weakPort = port
        let address = try #require(port).address
        let path = try #require(address.ipcPath)
        try #require(port).setMessageHandler { _ in delivered.increment() }
        try #require(port).schedule(in: loop, forMode: .default)
        try #require(port).send(msgid: 1, before: portDeadline())
        #expect(waitUntil { delivered.value == 1 })
        try thread.performAndWait {}  // the handler's pass is over: the loop holds no reference now
        #expect(access(path, F_OK) == 0)

        port = nil
        #expect(weakPort == nil)
        #expect(access(path, F_OK) != 0, "the ipc socket file outlived its port")
        let resolved = Port.resolve(address)
        #expect(!resolved.isValid)
        #expect(portErrorThrown { try resolved.send(msgid: 2, before: portDeadline()) }?.caseName == "invalidPort")
        // The inproc endpoint is released (libzmq unbinds as it closes the socket, on its own thread).
        let probe = try ZMQContext.shared.makeSocket(.pull)
        defer { probe.close() }
        #expect(waitUntil(timeout: 10) { (try? probe.bind(address.inprocEndpoint)) != nil })
        try thread.performAndWait {}
        #expect(delivered.value == 1)
    }

    @Test("S-PORT-5: dropping the last reference to 100 local ports (scheduled, sent to) returns their fds")
    func droppingPortsReturnsFileDescriptors() async throws {
        // In a child process, so that no test running in parallel opens or
        // closes fds while this one counts them.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            PortTests.portChurnCountingFileDescriptors()
        }
        let output = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("S-PORT-5 ") }, "no report in: \(output)")
        var numbers: [String: Int] = [:]
        for field in line.dropFirst("S-PORT-5 ".count).split(separator: " ") {
            let parts = field.split(separator: "=")
            if parts.count == 2, let value = Int(parts[1]) { numbers[String(parts[0])] = value }
        }
        let report = Comment(rawValue: String(line))
        let start = try #require(numbers["fdStart"], report)
        #expect(try #require(numbers["fdPeak"], report) >= start + 100, "the ports did not hold fds: the count proves nothing. \(report)")
        #expect(try #require(numbers["fdEnd"], report) <= start, report)
        #expect(numbers["filesLeft"] == 0, report)
    }

    /// In the exit test's child: makes, uses and drops ports, and reports the
    /// fd counts on stderr.
    static func portChurnCountingFileDescriptors() {
        do {
            let (thread, loop) = try makePortLoopThread("p5-fds")
            let delivered = Counter()
            func cycle(_ count: Int) throws -> (peak: Int, paths: [String]) {
                var ports: [Port] = []
                for index in 0..<count {
                    let port = try Port(transport: index.isMultiple(of: 2) ? .inproc : .ipc)
                    port.setMessageHandler { _ in delivered.increment() }
                    try port.schedule(in: loop, forMode: .default)
                    ports.append(port)
                }
                let target = delivered.value + count
                for port in ports { try port.send(msgid: 1, before: portDeadline()) }
                guard waitUntil(timeout: 30, { delivered.value == target }) else { throw TestFailure("messages missing") }
                try thread.performAndWait {}
                let peak = openFileDescriptorCount()
                let paths = ports.compactMap(\.address.ipcPath)
                ports.removeAll()
                return (peak, paths)
            }
            _ = try cycle(10)  // warm-up: the ZeroMQ context, the runtime directory
            let start = openFileDescriptorCount()
            let (peak, paths) = try cycle(100)
            // libzmq closes a socket's fds on its reaper thread, soon after zmq_close.
            waitUntil(timeout: 10) { openFileDescriptorCount() <= start }
            let end = openFileDescriptorCount()
            let filesLeft = paths.filter { access($0, F_OK) == 0 }.count
            reportToParent("S-PORT-5 fdStart=\(start) fdPeak=\(peak) fdEnd=\(end) filesLeft=\(filesLeft)")
            thread.stop()
        } catch {
            reportToParent("S-PORT-5 failed: \(error)")
            exit(1)
        }
    }
}

/// Whether kernel thread `tid` of this process is sleeping (state S in /proc).
func threadIsSleeping(_ tid: Int32) -> Bool {
    guard let text = readSmallFile("/proc/self/task/\(tid)/stat"), let close = text.lastIndex(of: ")") else { return false }
    return text[text.index(after: close)...].split(separator: " ").first == "S"
}
