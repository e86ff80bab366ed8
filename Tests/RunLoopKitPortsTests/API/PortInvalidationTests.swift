// Ports within one process, S-PORT-5: invalidation, by invalidate() or by
// dropping the last reference: handlers told once, sends and waiting sends
// failing, fds and socket files given back.
// The cross-process parts (ipc between processes, names, peer death) are in
// Transport/, Naming/ and Lifetime/; requests in PortRequestTests; the
// bytes on the wire in Wire/.
import Dispatch
import Glibc
import Synchronization
import Testing
import ZeroMQ
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("Ports in one process: invalidation (S-PORT-5)", .blocksThreads)
struct PortInvalidationTests {
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

    @Test("S-PORT-5: a port's first send, which found it valid, and another thread invalidating it before that send connects: the send fails with .invalidPort and connects nothing (libzmq keeps a connect to a closed inproc endpoint pending, accepts messages into it, and never frees the socket)")
    func aFirstSendThatRacesInvalidationConnectsNothing() throws {
        let port = try Port(transport: .inproc)
        let receiver = try #require(port.receiver)
        // The send's channel, made while the port was valid; its connect
        // comes after the invalidation, as when the other thread won the race.
        let channel = SendChannel(address: port.address, localReceiver: receiver)
        port.invalidate()
        #expect(throws: PortError.invalidPort(port.description)) {
            try channel.send(packedSize: 8, deadline: SendDeadline(Date() + 5), destination: port) { buffer in
                buffer.copyBytes(from: [UInt8](repeating: 0x2A, count: 8))
            }
        }
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
            PortInvalidationTests.portChurnCountingFileDescriptors()
        }
        let (numbers, report) = try childReport(result, prefix: "S-PORT-5 ")
        let start = try #require(numbers["fdStart"], report)
        #expect(try #require(numbers["fdPeak"], report) >= start + 100, "the ports did not hold fds: the count proves nothing. \(report)")
        #expect(try #require(numbers["fdEnd"], report) <= start, report)
        #expect(numbers["filesLeft"] == 0, report)
    }

    @Test("S-PORT-5: 1,000 ports, each invalidated by one thread while another makes the port's first send: each send is taken or fails with .invalidPort, and once the ports are gone the process holds no fd more than before (a send that connected after the invalidation left a socket that libzmq never frees)")
    func firstSendsRacingInvalidationReturnTheirFileDescriptors() async throws {
        // In a child process, so that no test running in parallel opens or
        // closes fds while this one counts them.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            PortInvalidationTests.firstSendsRacingInvalidation()
        }
        let (numbers, report) = try childReport(result, prefix: "S-PORT-5 race ")
        #expect(try #require(numbers["taken"], report) > 0 && #require(numbers["refused"], report) > 0,
                "the invalidations never met the sends: the count proves nothing. \(report)")
        #expect(numbers["otherErrors"] == 0, report)
        #expect(try #require(numbers["fdEnd"], report) <= #require(numbers["fdStart"], report), report)
    }

    /// In the exit test's child: races first sends against invalidations,
    /// and reports what the sends did and the fd counts on stderr.
    static func firstSendsRacingInvalidation() {
        do {
            do {  // warm-up: the ZeroMQ context's own fds
                let port = try Port(transport: .inproc)
                try port.send(msgid: 1, before: portDeadline())
                port.invalidate()
            }
            let start = openFileDescriptorCount()
            var taken = 0, refused = 0, otherErrors = 0
            for _ in 0..<1_000 {
                let port = try Port(transport: .inproc)
                let go = DispatchSemaphore(value: 0)
                let sender = SpawnedThread { () -> PortError? in
                    go.wait()
                    do throws(PortError) { try port.send(msgid: 1, before: portDeadline()) } catch { return error }
                    return nil
                }
                let invalidator = SpawnedThread { () -> Void in
                    go.wait()
                    port.invalidate()
                }
                go.signal()
                go.signal()
                try invalidator.join()
                let outcome: PortError? = try sender.join()
                switch outcome {
                case nil: taken += 1
                case .invalidPort?: refused += 1
                case .some: otherErrors += 1
                }
            }
            // libzmq closes a socket's fds on its reaper thread, soon after zmq_close.
            waitUntil(timeout: 10) { openFileDescriptorCount() <= start }
            let end = openFileDescriptorCount()
            reportToParent("S-PORT-5 race fdStart=\(start) fdEnd=\(end) taken=\(taken) refused=\(refused) otherErrors=\(otherErrors)")
        } catch {
            // No exit status: a failed exit test hides its child's output; the
            // parent finds no report and shows this line.
            reportToParent("S-PORT-5 race failed: \(error)")
        }
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
            // No exit status: a failed exit test hides its child's output; the
            // parent finds no report and shows this line.
            reportToParent("S-PORT-5 failed: \(error)")
        }
    }
}

/// Whether kernel thread `tid` of this process is sleeping (state S in /proc).
func threadIsSleeping(_ tid: Int32) -> Bool {
    guard let text = readSmallFile("/proc/self/task/\(tid)/stat"), let close = text.lastIndex(of: ")") else { return false }
    return text[text.index(after: close)...].split(separator: " ").first == "S"
}
