// A loop that serves tcp ports reads the process's tcp sockets itself, and
// forwards what is for other loops' ports (docs/design.md, "Across
// machines"): these tests hold it to what a port promises whoever reads,
// with `rlk-net-peer` children as the remote processes.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("A loop reads tcp for its ports (S-NET-1, S-SRC1-2, S-RUN-1)", .serialized, .blocksThreads)
struct TCPLoopReadingTests {
    init() { _ = NetworkKeysFixture.shared }

    /// A tcp port on loopback that logs each request's text and answers it.
    static func answeringPort(_ log: EventLog) throws -> Port {
        let port = try Port(transport: TCPPortTests.loopback)
        port.setMessageHandler { message in
            log.add(String(decoding: message.dataComponents.first ?? Data(), as: UTF8.self))
            try? message.replyPort?.send(msgid: 1, components: message.components, before: Date() + 5)
        }
        return port
    }

    /// A loop thread serving an answering port (`answeringPort`) with its log.
    struct AnsweringLoop {
        let thread: LoopThread
        let port: Port
        let log: EventLog

        /// Loop threads named `names`, started, their ports scheduled in
        /// that order (the first reads the listener first).
        static func start(_ names: String...) throws -> [AnsweringLoop] {
            let threads = names.map { LoopThread(name: $0) }
            for thread in threads { try thread.start() }
            var loops: [AnsweringLoop] = []
            for thread in threads {
                let log = EventLog()
                loops.append(AnsweringLoop(thread: thread, port: try answeringPort(log), log: log))
            }
            for loop in loops { try loop.port.schedule(on: loop.thread) }
            return loops
        }

        /// Invalidates the ports, then stops the threads.
        static func stop(_ loops: [AnsweringLoop]) {
            for loop in loops { loop.port.invalidate() }
            for loop in loops { loop.thread.stop() }
        }
    }

    /// Blocks `thread`'s loop in a block until the returned semaphore is
    /// signalled (60 s at most); returns once the loop is blocked.
    static func block(_ thread: LoopThread) throws -> DispatchSemaphore {
        let release = DispatchSemaphore(value: 0), blocked = DispatchSemaphore(value: 0)
        try thread.perform {
            blocked.signal()
            _ = release.wait(timeout: .now() + 60)
        }
        guard blocked.wait(timeout: .now() + 10) == .success else { throw TestFailure("\(thread) did not run the blocking block") }
        return release
    }

    @Test("S-SRC1-2, S-NET-1: requests over tcp for a port scheduled in a private mode wait while its loop runs another mode, and arrive in order once it runs the port's mode; S-RUN-1: once the port is removed, the mode finishes at once (the loop's tcp reading keeps no run going)")
    func requestsWaitForThePortsModeAndTheReaderKeepsNoRunGoing() throws {
        let log = EventLog()
        let mode = RunLoop.Mode("tcp-private")
        let (whileElsewhere, afterRemoval, elapsed) = try onNewThread { () -> ([String], RunLoop.RunResult, Double) in
            let loop = RunLoop.current
            let port = try Self.answeringPort(log)
            defer { port.invalidate() }
            try port.schedule(in: loop, forMode: mode)
            let peer = try NetworkPeerProcess.call(child: 0, port.descriptor, count: 3, payload: "m")
            defer { peer.stop() }
            // The default mode runs (a timer keeps it going) long enough for
            // the first request to reach this process: it must wait.
            let tick = try Timer(timeInterval: 0.05, repeats: true) { _ in }
            loop.add(tick, forMode: .default)
            _ = loop.run(mode: .default, seconds: 1)
            tick.invalidate()
            let whileElsewhere = log.all
            let deadline = Date() + 30
            while log.count < 3 && Date() < deadline { _ = loop.run(mode: mode, seconds: 0.1) }
            _ = waitUntil(timeout: 30) { peer.line(starting: "DONE") != nil || peer.hasExited }
            port.remove(from: loop, forMode: mode)
            let started = Date()
            let result = loop.run(mode: mode, seconds: 10)
            return (whileElsewhere, result, Date().timeIntervalSince(started))
        }
        #expect(whileElsewhere.isEmpty, "delivered while the loop ran another mode: \(whileElsewhere)")
        #expect(log.all == ["m0", "m1", "m2"])
        #expect(afterRemoval == .finished)
        #expect(elapsed < 5, "the run should have finished at once, not run out its 10 s")
    }

    @Test("S-NET-1: a busy loop holds up no other loop's tcp port: while one loop is blocked, requests to a port of another loop are answered; the blocked loop's port gets its requests, in order, once it runs again")
    func aBusyLoopHoldsUpNoOtherLoopsPort() throws {
        let loops = try AnsweringLoop.start("tcp-blocked", "tcp-free")
        defer { AnsweringLoop.stop(loops) }
        let (blockedThread, blockedPort, blockedLog) = (loops[0].thread, loops[0].port, loops[0].log)
        let (freePort, freeLog) = (loops[1].port, loops[1].log)
        let release = try Self.block(blockedThread)
        let toBlocked = try NetworkPeerProcess.call(child: 0, blockedPort.descriptor, count: 2, payload: "b")
        defer { toBlocked.stop() }
        let toFree = try NetworkPeerProcess.call(child: 1, freePort.descriptor, count: 3, payload: "f")
        defer { toFree.stop() }
        #expect(waitUntil(timeout: 30) { toFree.line(starting: "DONE") != nil || toFree.hasExited })
        #expect(toFree.lines(starting: "REPLY ") == ["f0", "f1", "f2"])
        #expect(blockedLog.all.isEmpty, "the blocked loop handled \(blockedLog.all)")
        release.signal()
        #expect(waitUntil(timeout: 30) { toBlocked.line(starting: "DONE") != nil || toBlocked.hasExited })
        #expect(blockedLog.all == ["b0", "b1"])
        #expect(freeLog.all == ["f0", "f1", "f2"])
    }

    @Test("S-NET-1, S-PORT-4: a peer that connects while the only loop reading tcp is blocked still gets its connection, well within the tcp connection bound: the network thread answers what no loop reads")
    func aConnectionIsMadeWhileEveryReadingLoopIsBusy() throws {
        let log = EventLog()
        let thread = LoopThread(name: "tcp-only-reader")
        try thread.start()
        defer { thread.stop() }
        let port = try Self.answeringPort(log)
        defer { port.invalidate() }
        try port.schedule(on: thread)
        let release = try Self.block(thread)
        let known = Set(NetworkHub.shared.state.withLock { $0.open.keys })
        let peerKey = NetworkKeysFixture.shared.children[2].publicKey.z85
        let peer = try NetworkPeerProcess.call(child: 2, port.descriptor, count: 1, payload: "c")
        defer { peer.stop() }
        // The peer's hello is read and answered while the loop is blocked:
        // its connection is known here, and it waits for its reply.
        #expect(waitUntil(timeout: 10) {
            NetworkHub.shared.state.withLock { state in
                state.open.contains { !known.contains($0.key) && $0.value.clientKey == peerKey && $0.value.isReady }
            }
        })
        #expect(log.all.isEmpty)
        release.signal()
        #expect(waitUntil(timeout: 30) { peer.line(starting: "DONE") != nil || peer.hasExited })
        #expect(peer.lines(starting: "REPLY ") == ["c0"])
        #expect(log.all == ["c0"])
    }

    @Test("S-NET-1: a socket is read by one loop, the one its messages go to: a peer's requests to a port of one loop do not wake another loop that serves tcp ports too")
    func aMessageWakesOnlyTheLoopThatReadsItsSocket() throws {
        // The quiet loop's port is scheduled first, so that it reads the
        // listener first: the traffic must move the reading to the busy loop.
        let loops = try AnsweringLoop.start("tcp-quiet", "tcp-busy")
        defer { AnsweringLoop.stop(loops) }
        let (quietThread, quietLog) = (loops[0].thread, loops[0].log)
        let busyPort = loops[1].port
        let quietLoop = try #require(quietThread.runLoop)
        let warmUp = try NetworkPeerProcess.call(child: 0, busyPort.descriptor, count: 5, payload: "w")
        defer { warmUp.stop() }
        #expect(waitUntil(timeout: 30) { warmUp.line(starting: "DONE") != nil || warmUp.hasExited })
        #expect(waitUntil { quietLoop.isWaiting })
        let quietPasses = quietLoop.passesCompleted
        let calls = try NetworkPeerProcess.call(child: 1, busyPort.descriptor, count: 200, payload: "c")
        defer { calls.stop() }
        #expect(waitUntil(timeout: 60) { calls.line(starting: "DONE") != nil || calls.hasExited })
        #expect(calls.lines(starting: "REPLY ").count == 200)
        #expect(quietLog.all.isEmpty)
        // A new connection may wake it a few times before its reading moves.
        #expect(quietLoop.passesCompleted - quietPasses < 20, "the quiet loop woke \(quietLoop.passesCompleted - quietPasses) times for 200 requests to another loop's port")
    }

    @Test("S-NET-1, S-THR-3: a loop that read tcp ends (its thread stops) while the process keeps its connections: the next loop that serves a tcp port reads them, its port gets every request in order, and the ended loop's reader is released, not kept")
    func aReaderOfAnEndedLoopIsReleasedAndItsSocketsReadByTheNext() throws {
        weak var endedReader: LoopNetworkReader?
        weak var endedLoop: RunLoop?
        do {
            let first = try AnsweringLoop.start("tcp-ending")
            let loop = try #require(first[0].thread.runLoop)
            endedLoop = loop
            let peer = try NetworkPeerProcess.call(child: 0, first[0].port.descriptor, count: 3, payload: "a")
            defer { peer.stop() }
            #expect(waitUntil(timeout: 30) { peer.line(starting: "DONE") != nil || peer.hasExited })
            #expect(first[0].log.all == ["a0", "a1", "a2"])
            endedReader = NetworkHub.shared.state.withLock { $0.readers[ObjectIdentifier(loop)] }
            #expect(endedReader != nil, "the loop serving a tcp port has no network reader")
            AnsweringLoop.stop(first)
        }
        let next = try AnsweringLoop.start("tcp-next")
        defer { AnsweringLoop.stop(next) }
        let calls = try NetworkPeerProcess.call(child: 1, next[0].port.descriptor, count: 3, payload: "b")
        defer { calls.stop() }
        #expect(waitUntil(timeout: 30) { calls.line(starting: "DONE") != nil || calls.hasExited })
        #expect(calls.lines(starting: "REPLY ") == ["b0", "b1", "b2"])
        #expect(next[0].log.all == ["b0", "b1", "b2"])
        // The network thread drops a reader whose loop is gone at its
        // housekeeping, every quarter of a second; asked here too, so that
        // what is checked is that nothing else keeps the reader, not when
        // that thread gets its turn on a loaded machine.
        #expect(waitUntil(timeout: 10) { NetworkHub.shared.pruneReaders(); return endedReader == nil }, "the ended loop's network reader is still alive: its loop \(endedLoop == nil ? "gone" : "alive"), its source \(endedReader?.source.isValid == true ? "valid" : "invalid"), \(NetworkHub.shared.state.withLock { $0.readers.values.contains { $0 === endedReader } } ? "still" : "no longer") in the hub's readers")
    }

    /// Gives `port` a handler that counts the numbered blocks (msgid 5,
    /// each carrying its index in its first 8 bytes) and those out of
    /// order, and answers anything else with its own msgid.
    static func countNumberedBlocks(at port: Port) -> (received: Counter, outOfOrder: Counter) {
        let received = Counter(), outOfOrder = Counter()
        port.setMessageHandler { message in
            guard message.msgid == 5 else {
                try? message.replyPort?.send(msgid: message.msgid, before: Date() + 5)
                return
            }
            let index = message.dataComponents.first.map { data in
                data.withUnsafeBytes { Int(UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self))) }
            } ?? -1
            if index != received.value { outOfOrder.increment() }
            received.increment()
        }
        return (received, outOfOrder)
    }

    @Test("S-NET-1: a burst of 20,000 messages (more than the queues between the two hold), then a request, and nothing more: the loop reads them all, in order, without waiting for the network thread's quarter-second read, though its reader stops every 32 messages (a port's batch) and no new input comes to wake it")
    func aBurstIsReadToTheEnd() throws {
        let thread = LoopThread(name: "tcp-burst")
        try thread.start()
        defer { thread.stop() }
        let port = try Port(transport: TCPPortTests.loopback)
        defer { port.invalidate() }
        let (received, outOfOrder) = Self.countNumberedBlocks(at: port)
        try port.schedule(on: thread)
        // What the network thread's quarter-second reading found that
        // nothing announced, on the listeners' sockets the burst comes in on.
        func unannounced() -> UInt64 {
            NetworkHub.shared.state.withLock { state in
                state.listeners.values.reduce(0) { $0 + $1.inbound.unannouncedMessages.load(ordering: .relaxed) }
            }
        }
        let unannouncedBefore = unannounced()
        let peer = try NetworkPeerProcess.start(["burst", NetworkPeerProcess.hex(port.descriptor), "20000"], child: 3)
        defer { peer.stop() }
        #expect(waitUntil(timeout: 90) { peer.line(starting: "DONE ") != nil || peer.hasExited }, "\(peer.program.errorOutput)")
        #expect(peer.line(starting: "DONE ") == "20000")
        #expect(received.value == 20_000)
        #expect(outOfOrder.value == 0)
        // A reader that lost its place after a batch would leave the rest
        // to the network thread's quarter-second reading, which counts
        // every message it finds that no signal or request announced.
        #expect(unannounced() == unannouncedBefore, "the network thread's quarter-second reading found messages the loop's reader left")
    }

    @Test("S-NET-1: while a loop reads tcp, a request from a thread that runs no loop to peers it has no connection to yet: each new connection's welcome and reply are read as they come, and nothing waits for the network thread's quarter-second reading")
    func aNewConnectionIsReadAsItsMessagesCome() throws {
        let loops = try AnsweringLoop.start("tcp-reading")
        defer { AnsweringLoop.stop(loops) }
        for child in 0...1 {
            let peer = try NetworkPeerProcess.serve(child: child)
            defer { peer.stop() }
            let remote = try peer.sendRight()
            let answered = DispatchSemaphore(value: 0)
            let outcome = Locked<String?>(nil)
            // A pool thread: its loop runs only while the request waits.
            DispatchQueue.global().async {
                do {
                    let reply = try remote.sendRequest(msgid: 1, components: [.data(Data("first".utf8))], sendTimeout: 10, receiveTimeout: 10)
                    outcome.withLock { $0 = String(decoding: reply.dataComponents.first ?? Data(), as: UTF8.self) }
                } catch {
                    outcome.withLock { $0 = "\(error)" }
                }
                answered.signal()
            }
            #expect(answered.wait(timeout: .now() + 30) == .success)
            #expect(outcome.withLock { $0 } == "first")
            let instance = try #require(remote.address.tcpEndpoint?.instance)
            let connection = try #require(NetworkHub.shared.state.withLock { $0.connections[instance] })
            // The reading followed the reply to the pool thread's loop, which
            // runs no more: what the peer sends next to the loop's port still
            // comes at once.
            _ = try remote.sendRequest(msgid: 2, components: [.port(loops[0].port)], sendTimeout: 10, receiveTimeout: 10)
            #expect(waitUntil(timeout: 10) { loops[0].log.all.contains("via \(peer.program.pid)") }, "\(loops[0].log.all)")
            // A new socket signals its first message only once it has been
            // read: left unread, its welcome waited for that reading.
            #expect(connection.inbound?.unannouncedMessages.load(ordering: .relaxed) == 0)
        }
    }

    @Test("S-NET-1: a loop that sends from its tcp port's handler (the next request, on each reply) reads the socket to its end right after that send, and the read stands for the send's look for input: 300 round trips with a peer, none lost, the reader's callout that was to make that read called off, and the socket looked at after a send only where no read was owed")
    func aSendFromTheHandlerIsFollowedByTheSocketsRead() throws {
        let thread = LoopThread(name: "tcp-ping-pong")
        try thread.start()
        defer { thread.stop() }
        let peer = try NetworkPeerProcess.serve(child: 0)
        defer { peer.stop() }
        let remote = try peer.sendRight()
        let port = try Port(transport: TCPPortTests.loopback)
        defer { port.invalidate() }
        let rounds = 300
        let replies = Counter()
        let finished = DispatchSemaphore(value: 0)
        let failure = Locked<String?>(nil)
        // The serving peer answers msgid 7 with the request's components.
        let ping = { @Sendable (round: Int) in
            do throws(PortError) {
                try remote.send(msgid: 7, components: [.data(Data("\(round)".utf8))], replyPort: port, before: Date() + 10)
            } catch {
                failure.withLock { $0 = "round \(round): \(error)" }
                finished.signal()
            }
        }
        let instance = try #require(remote.address.tcpEndpoint?.instance)
        let connection = { @Sendable in NetworkHub.shared.state.withLock { $0.connections[instance] }?.inbound }
        // The counts from the first reply on once this loop reads the
        // socket: the first request, sent from a block, waited for the
        // peer's welcome, looking at the socket each time it woke, and
        // the socket went to another loop's reader first, which handed
        // this loop the replies it read until its read ended (reading
        // follows the traffic at the end of a read).
        let atFirstReply = Locked<(round: Int, looks: UInt64, readings: UInt64, fallbacks: UInt64)?>(nil)
        port.setMessageHandler { message in
            let round = replies.increment()
            if String(decoding: message.dataComponents.first ?? Data(), as: UTF8.self) != "\(round - 1)" {
                failure.withLock { $0 = $0 ?? "reply \(round) out of order" }
            }
            if let inbound = connection(), let reader = inbound.reader, reader.loopID == ObjectIdentifier(RunLoop.current) {
                atFirstReply.withLock {
                    $0 = $0 ?? (
                        round, inbound.looksMade.load(ordering: .relaxed), inbound.readingsInsteadOfLoops.load(ordering: .relaxed),
                        reader.fallbackRuns.load(ordering: .relaxed)
                    )
                }
            }
            if round == rounds { finished.signal() } else { ping(round) }
        }
        try port.schedule(on: thread)
        try thread.perform { ping(0) }
        #expect(finished.wait(timeout: .now() + 60) == .success, "\(replies.value) of \(rounds) replies")
        #expect(failure.withLock { $0 } == nil)
        #expect(replies.value == rounds)
        let inbound = try #require(connection())
        let before = try #require(atFirstReply.withLock { $0 })
        #expect(before.round < rounds / 2, "this loop read the socket from reply \(before.round) on")
        // Each later request is sent from a handler whose read to the
        // socket's end is owed, and makes that read at once: no look, and
        // the reader's callout that was to make it is called off (it runs
        // only after the last reply). Without that, every send looks, or
        // leaves a look to the network thread, and the reader runs twice a
        // round trip. Besides: one look for the request sent on the first
        // reply counted, which another reader may have read, and what the
        // network thread
        // reads meanwhile (its quarter-second reading, the more often the
        // slower the run). Such a reading takes the owed read from the
        // loop (the send under way looks), may take a reply (its handler's
        // send looks), and leaves the reader's callout to read the next one
        // to its end (a callout, and its handler's send looks): at most
        // three looks and one callout each. (Its count of messages nothing
        // announced is not asserted here: a reply that comes between its
        // look at the signal and its read counts, and in a ping-pong one
        // always may.)
        let readings = inbound.readingsInsteadOfLoops.load(ordering: .relaxed) - before.readings
        let looks = inbound.looksMade.load(ordering: .relaxed) - before.looks
        #expect(looks <= 1 + 3 * readings, "\(looks) looks for input after \(rounds - before.round) sends, \(readings) readings by the network thread")
        let fallbacks = try #require(inbound.reader).fallbackRuns.load(ordering: .relaxed) - before.fallbacks
        #expect(fallbacks <= 1 + readings, "\(fallbacks) callouts of the loop's reader to make a read owed, \(readings) readings by the network thread")
    }

    @Test("S-NET-1, S-PORT-4: a peer that floods a port whose loop is blocked fills what lies between them until its sends time out; once the loop runs, every message it sent arrives, none lost, in order")
    func aFullPortHoldsItsSocketAndLosesNothing() throws {
        let thread = LoopThread(name: "tcp-flooded")
        try thread.start()
        defer { thread.stop() }
        let port = try Port(transport: TCPPortTests.loopback)
        defer { port.invalidate() }
        let (received, outOfOrder) = Self.countNumberedBlocks(at: port)
        try port.schedule(on: thread)
        let flooder = try NetworkPeerProcess.start(["flood", NetworkPeerProcess.hex(port.descriptor), "1024", "stay"], child: 3)
        defer { flooder.stop() }
        #expect(waitUntil(timeout: 30) { flooder.line(starting: "CONNECTED") != nil || flooder.hasExited })
        let release = try Self.block(thread)
        let beforeBlocking = received.value
        #expect(waitUntil(timeout: 60) { flooder.line(starting: "FULL ") != nil || flooder.hasExited })
        let sent = Int(flooder.line(starting: "FULL ") ?? "") ?? -1
        #expect(sent > beforeBlocking)
        #expect(received.value == beforeBlocking, "nothing is delivered while the loop is blocked")
        release.signal()
        #expect(waitUntil(timeout: 60) { received.value >= sent })
        #expect(received.value == sent)
        #expect(outOfOrder.value == 0)
    }
}
