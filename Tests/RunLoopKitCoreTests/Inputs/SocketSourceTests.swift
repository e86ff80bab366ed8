// Socket sources (Source1): S-SRC1-1 and S-SRC1-2.
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

/// A connected inproc pair: `receiver` is bound and goes to a SocketSource,
/// `sender` stays with the test's thread.
struct SocketPair {
    let receiver: Socket
    let sender: Socket

    /// `type` is the receiving side: `.pair` (peer `.pair`) or `.pull` (peer `.push`).
    init(_ type: SocketType) throws {
        let endpoint = uniqueEndpoint("src1-\(type)")
        receiver = try ZMQContext.shared.makeSocket(type)
        try receiver.bind(endpoint)
        sender = try ZMQContext.shared.makeSocket(type == .pull ? .push : .pair)
        try sender.connect(endpoint)
    }

    func send(_ text: String) throws {
        guard try sender.send(text) else { throw TestFailure("could not send \(text)") }
    }
}

/// Receives one message without waiting, as text.
func receiveOne(_ socket: Socket) -> String? {
    guard let frames = try? socket.receiveMultipart(dontWait: true) else { return nil }
    return frames.map { String(decoding: $0, as: UTF8.self) }.joined(separator: "|")
}

@Suite("Socket sources (Source1)", .blocksThreads)
struct SocketSourceTests {
    // MARK: S-SRC1-1

    @Test("S-SRC1-1: a message on a ZeroMQ socket wakes the loop by itself, and the handler runs on the loop's thread",
          arguments: [SocketType.pair, .pull])
    func messageWakesLoop(type: SocketType) throws {
        let sockets = try SocketPair(type)
        let events = EventLog()
        let handlerThread = Locked<Int32>(0)
        let source = SocketSource(socket: sockets.receiver) { _, socket in
            handlerThread.value = currentThreadID()
            events.add(receiveOne(socket) ?? "nothing")
        }
        let loopHandoff = Handoff<RunLoop>()
        let thread = SpawnedThread { () -> (RunLoop.RunResult, Int32) in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            try loop.add(source, forMode: .default)
            loopHandoff.put(loop)
            return (loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: true), currentThreadID())
        }
        let loop = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        try sockets.send("hello")  // no wakeUp(): the socket wakes the loop
        let (result, loopThread) = try thread.join()
        #expect(result == .handledSource)
        #expect(handlerThread.value == loopThread)
        let (log, emptyPasses) = droppingEmptyPasses(events.all)
        #expect(log == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "hello", "exit"])
        #expect(emptyPasses <= 2, "\(events.all)")
    }

    @Test("S-SRC1-1: one Source1 event per pass; a socket with messages already queued is handled without sleeping",
          arguments: [SocketType.pair, .pull])
    func oneEventPerPass(type: SocketType) throws {
        let sockets = try SocketPair(type)
        for text in ["m1", "m2", "m3"] { try sockets.send(text) }
        let events = EventLog()
        let source = SocketSource(socket: sockets.receiver) { _, socket in
            let text = receiveOne(socket) ?? "nothing"
            events.add(text)
            if text == "m3" { RunLoop.current.stop() }  // the handler runs on the loop's thread
        }
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            try loop.add(source, forMode: .default)
            recordActivities(of: loop, mode: .default, into: events)
            return loop.run(mode: .default, seconds: 30)
        }
        #expect(result == .stopped)
        #expect(events.all == [
            "entry",
            "beforeTimers", "beforeSources", "m1",
            "beforeTimers", "beforeSources", "m2",
            "beforeTimers", "beforeSources", "m3",
            "exit",
        ])
    }

    @Test("S-SRC1-1: a plain file descriptor (a pipe) works as a Source1, one event per pass, on the loop's thread")
    func pipeSource() throws {
        let pipeFDs = try makePipe()
        defer { close(pipeFDs.read); close(pipeFDs.write) }
        let events = EventLog()
        let handlerThread = Locked<Int32>(0)
        let source = SocketSource(fileDescriptor: pipeFDs.read) { _, fd in
            handlerThread.value = currentThreadID()
            var byte: UInt8 = 0
            guard read(fd, &byte, 1) == 1 else { return events.add("nothing") }
            events.add(String(UnicodeScalar(byte)))
            if byte == UInt8(ascii: "c") { RunLoop.current.stop() }
        }
        let loopHandoff = Handoff<RunLoop>()
        let thread = SpawnedThread { () -> (RunLoop.RunResult, Int32) in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            try loop.add(source, forMode: .default)
            loopHandoff.put(loop)
            let result = loop.run(mode: .default, seconds: 30)
            source.invalidate()
            return (result, currentThreadID())
        }
        let loop = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        #expect(write(pipeFDs.write, "abc", 3) == 3)
        let (result, loopThread) = try thread.join()
        #expect(result == .stopped)
        #expect(handlerThread.value == loopThread)
        // Each byte takes a pass of its own. (Whether the loop announces
        // beforeWaiting / afterWaiting between them, though epoll returns at
        // once for an fd still readable, is not what this test is about.)
        let (log, emptyPasses) = droppingEmptyPasses(events.all)
        #expect(log.filter { $0 != "beforeWaiting" && $0 != "afterWaiting" } == [
            "entry", "beforeTimers", "beforeSources", "a",
            "beforeTimers", "beforeSources", "b",
            "beforeTimers", "beforeSources", "c",
            "exit",
        ])
        #expect(Array(log.prefix(6)) == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "a"])
        #expect(emptyPasses <= 1, "\(events.all)")
    }

    @Test("S-SRC1-1: an auxiliary source (the ports' network reader) is no event of its own: the source it marks ready is handled in the same pass, as if its own socket had woken the loop; with returnAfterSourceHandled the run returns after it")
    func anAuxiliarySourceLeavesThePassToTheSourceItMarks() throws {
        for returnAfterSourceHandled in [false, true] {
            let wake = try makePipe(), quiet = try makePipe()
            defer { for fd in [wake.read, wake.write, quiet.read, quiet.write] { close(fd) } }
            let events = EventLog()
            // Marked ready by the auxiliary source, as a port the reader
            // handed a message to; its own fd never becomes readable.
            let marked = SocketSource(fileDescriptor: quiet.read) { _, _ in
                events.add("marked")
                RunLoop.current.stop()
            }
            let auxiliary = SocketSource(auxiliaryOn: wake.read) {
                var byte: UInt8 = 0
                _ = read(wake.read, &byte, 1)
                events.add("auxiliary")
                RunLoop.current.markReady(marked)
                return CalloutBatch.Outcome(handled: false, drained: true)
            }
            let loopHandoff = Handoff<RunLoop>()
            let thread = SpawnedThread { () -> RunLoop.RunResult in
                let loop = RunLoop.current
                recordActivities(of: loop, mode: .default, into: events)
                try loop.add(marked, forMode: .default)
                try loop.add(auxiliary, forMode: .default)
                loopHandoff.put(loop)
                defer { marked.invalidate(); auxiliary.invalidate() }
                return loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: returnAfterSourceHandled)
            }
            let loop = try loopHandoff.take()
            #expect(waitUntil { loop.isWaiting })
            #expect(write(wake.write, "w", 1) == 1)
            let result = try thread.join()
            #expect(result == (returnAfterSourceHandled ? .handledSource : .stopped))
            let (log, _) = droppingEmptyPasses(events.all)
            #expect(Array(log.suffix(5)) == ["beforeWaiting", "afterWaiting", "auxiliary", "marked", "exit"], "\(events.all)")
        }
    }

    @Test("S-SRC1-1: a socket source added from another thread while the loop runs is serviced (any-thread add)")
    func socketSourceAddedFromAnotherThread() throws {
        let worker = LoopThread(name: "src1-add")
        try worker.start()
        defer { worker.stop() }
        let loop = try #require(worker.runLoop)
        let sockets = try SocketPair(.pair)
        let received = Handoff<(String, Int32)>()
        let source = SocketSource(socket: sockets.receiver) { _, socket in
            if let text = receiveOne(socket) { received.put((text, currentThreadID())) }
        }
        defer { source.invalidate() }
        try loop.add(source, forMode: .default)  // from this thread, not the loop's
        try sockets.send("from afar")
        let (text, tid) = try received.take()
        #expect(text == "from afar")
        #expect(tid == worker.threadID)
    }

    // MARK: S-SRC1-2

    @Test("S-SRC1-2: messages sent while the loop runs another mode wait in the socket and arrive in order afterwards",
          arguments: [SocketType.pair, .pull])
    func messagesWaitForTheirMode(type: SocketType) throws {
        let sockets = try SocketPair(type)
        let events = EventLog()
        let handled = DispatchSemaphore(value: 0)
        let source = SocketSource(socket: sockets.receiver) { _, socket in
            let text = receiveOne(socket) ?? "nothing"
            events.add(text)
            handled.signal()
            if text == "m5" { RunLoop.current.stop() }
        }
        let loopHandoff = Handoff<RunLoop>()
        let thread = SpawnedThread { () -> Void in
            let loop = RunLoop.current
            try loop.add(source, forMode: "S-SRC1-2.net")
            loop.add(unsignalledSource(), forMode: "S-SRC1-2.other")
            // Adding the socket source woke the loop (as it must from another
            // thread); let a poll take that wake-up, so that the run below
            // sleeps until it is stopped.
            loop.run(mode: "S-SRC1-2.other", seconds: 0)
            loopHandoff.put(loop)
            events.add("other: \(loop.run(mode: "S-SRC1-2.other", seconds: 30))")
            events.add("net: \(loop.run(mode: "S-SRC1-2.net", seconds: 30))")
        }
        let loop = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting && loop.currentMode == "S-SRC1-2.other" })
        let passes = loop.passesCompleted
        for index in 1...5 { try sockets.send("m\(index)") }
        // Nothing may be handled while the loop runs the other mode.
        #expect(handled.wait(timeout: .now() + 0.2) == .timedOut)
        #expect(loop.passesCompleted == passes, "messages for another mode woke the loop")
        loop.stop()
        try thread.join()
        #expect(events.all == ["other: stopped", "m1", "m2", "m3", "m4", "m5", "net: stopped"])
    }

    @Test("S-SRC1-2: messages that arrive between runs of the source's mode are not lost",
          arguments: [SocketType.pair, .pull])
    func messagesBetweenRunsAreKept(type: SocketType) throws {
        let sockets = try SocketPair(type)
        let events = EventLog()
        let source = SocketSource(socket: sockets.receiver) { _, socket in
            while let text = receiveOne(socket) { events.add(text) }
        }
        let loopHandoff = Handoff<RunLoop>()
        let sent = DispatchSemaphore(value: 0)
        let thread = SpawnedThread { () -> Void in
            let loop = RunLoop.current
            try loop.add(source, forMode: .default)
            loop.run(mode: .default, seconds: 0)  // looks at the socket once, finds nothing
            loopHandoff.put(loop)
            _ = sent.wait(timeout: .now() + 30)  // not running at all while the messages come
            loop.run(mode: .default, seconds: 0.1)
            for _ in 0..<50 where events.count < 3 { loop.run(mode: .default, seconds: 0.1) }
            source.invalidate()
        }
        _ = try loopHandoff.take()
        for text in ["x1", "x2", "x3"] { try sockets.send(text) }
        sent.signal()
        try thread.join()
        #expect(events.all == ["x1", "x2", "x3"])
    }
}
