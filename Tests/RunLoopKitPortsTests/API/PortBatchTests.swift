// Several messages per callout (S-SRC1-1 as amended, S-SRC1-2): a port
// delivers up to its maxMessagesPerCallout queued messages in one step 9.
// Each test queues its messages before its loop runs, on the loop's own
// thread, so that what one pass finds is known exactly.
import Dispatch
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Port batches (S-SRC1-1, S-SRC1-2)", .blocksThreads)
struct PortBatchTests {
    /// A port scheduled in `mode` of the calling thread's loop, with an
    /// observer that logs "pass" at the start of each pass, and a handler
    /// that logs each message's msgid and then runs `onMessage`. With
    /// `inPlace`, the handler reads each message in place
    /// (`setInPlaceMessageHandler`) and `onMessage` gets its `makeMessage()`:
    /// the batch rules are the same for both kinds of handler.
    static func loggingPort(
        _ log: EventLog, mode: RunLoop.Mode = .default, limit: Int? = nil, inPlace: Bool = false,
        onMessage: @escaping @Sendable (PortMessage) -> Void = { _ in }
    ) throws -> Port {
        let loop = RunLoop.current
        let port = try Port(transport: .inproc)
        if let limit { port.maxMessagesPerCallout = limit }
        if inPlace {
            port.setInPlaceMessageHandler { message in
                log.add("m\(message.msgid)")
                onMessage(message.makeMessage())
            }
        } else {
            port.setMessageHandler { message in
                log.add("m\(message.msgid)")
                onMessage(message)
            }
        }
        try port.schedule(in: loop, forMode: mode)
        loop.add(RunLoopObserver(activities: .beforeTimers) { _, _ in log.add("pass") }, forMode: mode)
        return port
    }

    static func send(_ msgids: ClosedRange<UInt32>, to port: Port) throws {
        for msgid in msgids { try port.send(msgid: msgid, before: portDeadline()) }
    }

    /// The messages delivered in each pass, from a log of "pass" and "mN".
    static func batches(_ log: [String]) -> [[String]] {
        var batches: [[String]] = []
        for entry in log {
            if entry == "pass" { batches.append([]) } else if !batches.isEmpty { batches[batches.count - 1].append(entry) }
        }
        return batches.filter { !$0.isEmpty }
    }

    @Test("S-SRC1-1: queued messages are delivered in one callout, up to maxMessagesPerCallout, in order",
          arguments: [false, true])
    func batchesUpToTheLimit(inPlace: Bool) throws {
        let all = EventLog(), limited = EventLog()
        try onNewThread {
            let port = try Self.loggingPort(all, inPlace: inPlace)
            try Self.send(1...10, to: port)
            _ = RunLoop.current.run(mode: .default, seconds: 0)
            port.invalidate()
        }
        try onNewThread {
            let port = try Self.loggingPort(limited, limit: 3, inPlace: inPlace)
            try Self.send(1...8, to: port)
            for _ in 0..<3 { _ = RunLoop.current.run(mode: .default, seconds: 0) }
            port.invalidate()
        }
        #expect(Self.batches(all.all) == [(1...10).map { "m\($0)" }], "\(all.all)")
        #expect(Self.batches(limited.all) == [["m1", "m2", "m3"], ["m4", "m5", "m6"], ["m7", "m8"]], "\(limited.all)")
        #expect(Port.defaultMaxMessagesPerCallout > 1)
    }

    @Test("S-SRC1-1, S-RUN-6: a run with returnAfterSourceHandled delivers exactly one message and returns handledSource",
          arguments: [false, true])
    func returnAfterSourceHandledTakesOne(inPlace: Bool) throws {
        let log = EventLog()
        let results = try onNewThread { () -> [Bool] in
            let port = try Self.loggingPort(log, inPlace: inPlace)
            try Self.send(1...3, to: port)
            let loop = RunLoop.current
            var results: [Bool] = []
            for _ in 0..<3 { results.append(loop.run(mode: .default, before: Date() + 5)) }
            let result = loop.run(mode: .default, seconds: 0.05, returnAfterSourceHandled: true)
            port.invalidate()
            return results + [result == .timedOut]
        }
        #expect(results == [true, true, true, true])
        #expect(Self.batches(log.all) == [["m1"], ["m2"], ["m3"]], "\(log.all)")
    }

    @Test("S-SRC1-1, S-RUN-4: a stop requested by a handler ends the batch after that message; the rest wait, in order",
          arguments: [false, true])
    func stopEndsTheBatch(inPlace: Bool) throws {
        let log = EventLog()
        let (first, second) = try onNewThread { () -> (RunLoop.RunResult, RunLoop.RunResult) in
            let port = try Self.loggingPort(log, inPlace: inPlace) { message in
                if message.msgid == 3 { RunLoop.current.stop() }
            }
            try Self.send(1...6, to: port)
            let first = RunLoop.current.run(mode: .default, seconds: 5)
            log.add("stopped")
            let second = RunLoop.current.run(mode: .default, seconds: 0)
            port.invalidate()
            return (first, second)
        }
        #expect(first == .stopped)
        #expect(second == .timedOut)
        #expect(log.all.filter { $0 != "pass" } == ["m1", "m2", "m3", "stopped", "m4", "m5", "m6"])
    }

    @Test("S-SRC1-1: a stop requested from another thread during a batch ends it after the message being delivered")
    func stopFromAnotherThread() throws {
        let log = EventLog()
        let inSecond = DispatchSemaphore(value: 0), stopped = DispatchSemaphore(value: 0)
        let loopOfThread = Handoff<RunLoop>()
        let thread = SpawnedThread<Int>(named: "batch-stop") {
            let loop = RunLoop.current
            loopOfThread.put(loop)
            let port = try Self.loggingPort(log) { message in
                guard message.msgid == 2 else { return }
                inSecond.signal()
                _ = stopped.wait(timeout: .now() + 30)  // held until the stop was asked for
            }
            try Self.send(1...5, to: port)
            _ = loop.run(mode: .default, seconds: 30)
            let delivered = log.all.filter { $0.hasPrefix("m") }.count
            port.invalidate()
            return delivered
        }
        #expect(waitFor(inSecond))
        try loopOfThread.take().stop()
        stopped.signal()
        #expect(try thread.join() == 2)
    }

    @Test("S-SRC1-1: busy ports of one loop are served fairly, batch by batch")
    func fairness() throws {
        let log = EventLog()
        try onNewThread {
            let first = try Port(transport: .inproc), second = try Port(transport: .inproc)
            for (name, port) in [("a", first), ("b", second)] {
                port.maxMessagesPerCallout = 4
                port.setMessageHandler { log.add("\(name)\($0.msgid)") }
                try port.schedule(in: RunLoop.current, forMode: .default)
                try Self.send(1...12, to: port)
            }
            for _ in 0..<8 { _ = RunLoop.current.run(mode: .default, seconds: 0) }
            first.invalidate()
            second.invalidate()
        }
        let entries = log.all
        #expect(entries.count == 24)
        // Neither port waits for the other to empty: b's first message comes
        // before a's fifth, and a's before b's fifth, whichever went first.
        let index = { (entry: String) in entries.firstIndex(of: entry) ?? .max }
        #expect(index("b1") < index("a5") && index("a1") < index("b5"), "\(entries)")
        #expect(entries.filter { $0.hasPrefix("a") } == (1...12).map { "a\($0)" })
        #expect(entries.filter { $0.hasPrefix("b") } == (1...12).map { "b\($0)" })
    }

    @Test("S-SRC1-2: messages of a port in another mode wait, in order, and come as a batch when its mode runs",
          arguments: [false, true])
    func otherModeWaits(inPlace: Bool) throws {
        let log = EventLog()
        let inOther = try onNewThread { () -> Int in
            let special = RunLoop.Mode("S-SRC1-2.batch")
            let port = try Self.loggingPort(log, mode: special, inPlace: inPlace)
            RunLoop.current.add(keepAliveSource(), forMode: .default)
            try Self.send(1...5, to: port)
            _ = RunLoop.current.run(mode: .default, seconds: 0.05)
            let deliveredMeanwhile = log.all.filter { $0.hasPrefix("m") }.count
            _ = RunLoop.current.run(mode: special, seconds: 0)
            port.invalidate()
            return deliveredMeanwhile
        }
        #expect(inOther == 0)
        #expect(Self.batches(log.all) == [["m1", "m2", "m3", "m4", "m5"]])
    }

    @Test("S-SRC1-1: a handler that removes its port from the running mode ends the batch; the rest waits for the port's return")
    func removalEndsTheBatch() throws {
        let log = EventLog()
        try onNewThread {
            let loop = RunLoop.current
            let port = try Self.loggingPort(log) { message in
                if message.msgid == 2 { RunLoop.current.remove(message.receivePort!, forMode: .default) }
            }
            loop.add(keepAliveSource(), forMode: .default)
            try Self.send(1...4, to: port)
            _ = loop.run(mode: .default, seconds: 0)
            log.add("removed")
            _ = loop.run(mode: .default, seconds: 0.05)
            log.add("back")
            try port.schedule(in: loop, forMode: .default)
            _ = loop.run(mode: .default, seconds: 0)
            port.invalidate()
        }
        #expect(log.all.filter { $0 != "pass" } == ["m1", "m2", "removed", "back", "m3", "m4"])
    }

    @Test("S-SRC1-2, S-RUN-2: a timer that removes a ready port from the running mode, in the pass that would serve it, keeps every message from that pass; they wait for the port's return, and a run with returnAfterSourceHandled does not count the port as handled",
          arguments: [false, true])
    func removalBeforeTheBatch(inPlace: Bool) throws {
        let log = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            let port = try Self.loggingPort(log, inPlace: inPlace)
            // Step 9 fires due timers, then serves one ready port: the timer
            // removes the port after the pass took its look at the mode.
            let timer = try Timer(timeInterval: 0, repeats: false) { _ in
                log.add("removed")
                RunLoop.current.remove(port, forMode: .default)
            }
            loop.add(timer, forMode: .default)
            try Self.send(1...3, to: port)
            // With the timer fired and the port gone, the mode is empty.
            let result = loop.run(mode: .default, seconds: 5, returnAfterSourceHandled: true)
            log.add("back")
            try port.schedule(in: loop, forMode: .default)
            _ = loop.run(mode: .default, seconds: 0)
            port.invalidate()
            return result
        }
        #expect(result == .finished, "no source was handled")
        #expect(log.all.filter { $0 != "pass" } == ["removed", "back", "m1", "m2", "m3"])
    }

    @Test("S-SRC1-1, S-BLK-4: blocks queued during a batch run after it (step 10)")
    func blocksAfterTheBatch() throws {
        let log = EventLog()
        try onNewThread {
            let loop = RunLoop.current
            let port = try Self.loggingPort(log) { message in
                loop.perform { log.add("block\(message.msgid)") }
            }
            try Self.send(1...3, to: port)
            _ = loop.run(mode: .default, seconds: 0)
            port.invalidate()
        }
        #expect(log.all.filter { $0 != "pass" } == ["m1", "m2", "m3", "block1", "block2", "block3"])
    }

    @Test("S-SRC1-1, S-RUN-8: a handler that runs the loop again may receive the next messages there; each is delivered once, in order",
          arguments: [false, true])
    func nestedRunContinues(inPlace: Bool) throws {
        let log = EventLog()
        try onNewThread {
            let port = try Self.loggingPort(log, limit: 2, inPlace: inPlace) { message in
                if message.msgid == 1 { _ = RunLoop.current.run(mode: .default, seconds: 0) }
            }
            try Self.send(1...6, to: port)
            for _ in 0..<4 { _ = RunLoop.current.run(mode: .default, seconds: 0) }
            port.invalidate()
        }
        #expect(log.all.filter { $0 != "pass" } == (1...6).map { "m\($0)" })
    }

    @Test("S-SRC1-1: a handler set during a batch (by the handler itself, or to none) takes the very next message of that batch")
    func handlerChangedMidBatch() throws {
        let log = EventLog()
        try onNewThread {
            let port = try Port(transport: .inproc)
            @Sendable func second(_ message: PortMessage) {
                log.add("second\(message.msgid)")
                if message.msgid == 3 { port.setMessageHandler(nil) }
            }
            port.setMessageHandler { message in
                log.add("first\(message.msgid)")
                if message.msgid == 1 { port.setMessageHandler(second) }
            }
            try port.schedule(in: RunLoop.current, forMode: .default)
            try Self.send(1...5, to: port)
            _ = RunLoop.current.run(mode: .default, seconds: 0)
            #expect(port.droppedMessageCount == 2, "messages 4 and 5 arrived with no handler")
            port.invalidate()
        }
        #expect(log.all == ["first1", "second2", "second3"])
    }
}
