// Requests over ports within one process: Port.sendRequest (a loop thread
// waits for the reply in a private mode, as CFMessagePortSendRequest does),
// the async Port.request and the Port.messages() AsyncSequence. They rest on
// S-PORT-3 (replies reach the original), S-PORT-4 (deadlines) and S-MODE-2
// (only the running mode's items are serviced).
import Dispatch
import Glibc
import Testing
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("Port requests (sendRequest, request, messages)", .blocksThreads)
struct PortRequestTests {
    /// Serves `port` on `loop`: each request's reply port gets what `answer`
    /// returns for it (nothing for nil).
    static func serve(_ port: Port, on loop: RunLoop, _ answer: @escaping @Sendable (PortMessage) -> PortMessage?) throws {
        port.setMessageHandler { request in
            guard let reply = answer(request), let replyPort = request.replyPort else { return }
            try? replyPort.send(reply, before: portDeadline())
        }
        try port.schedule(in: loop, forMode: .default)
    }

    /// An answer: msgid + 1, the request's data components and then "pong".
    static let echo: @Sendable (PortMessage) -> PortMessage? = { request in
        PortMessage(msgid: request.msgid &+ 1, components: request.components + [.data(Data("pong".utf8))])
    }

    // MARK: - sendRequest

    @Test("S-PORT-3: sendRequest from a LoopThread to a port served on another LoopThread returns the reply, request after request")
    func sendRequestReturnsReply() throws {
        let (serverThread, serverLoop) = try makePortLoopThread("rq-server")
        defer { serverThread.stop() }
        let (client, _) = try makePortLoopThread("rq-client")
        defer { client.stop() }
        let server = try Port(transport: .inproc)
        defer { server.invalidate() }
        try Self.serve(server, on: serverLoop, Self.echo)

        let reply = try client.performAndWait {
            try server.sendRequest(msgid: 41, components: [.data(Data("ping".utf8))], sendTimeout: 5, receiveTimeout: 30)
        }
        #expect(reply.msgid == 42)
        #expect(reply.dataComponents == [Data("ping".utf8), Data("pong".utf8)])
        let replyPort = try #require(reply.receivePort)
        #expect(replyPort.isLocal && replyPort !== server, "the reply arrives on the caller's own reply port")

        let msgids = try client.performAndWait {
            try (UInt32(100)..<300).map { try server.sendRequest(msgid: $0, sendTimeout: 5, receiveTimeout: 30).msgid }
        }
        #expect(msgids == Array(101..<301))
    }

    @Test("S-PORT-3, S-MODE-2: while sendRequest waits, the caller's loop runs a private mode: blocks and timers of its default mode wait, and run once the reply is in")
    func privateModeWhileWaiting() throws {
        let (serverThread, serverLoop) = try makePortLoopThread("rq-mode-server")
        defer { serverThread.stop() }
        let (client, clientLoop) = try makePortLoopThread("rq-mode-client")
        defer { client.stop() }
        let server = try Port(transport: .inproc)
        defer { server.invalidate() }
        let requestArrived = DispatchSemaphore(value: 0)
        let mayReply = DispatchSemaphore(value: 0)
        try Self.serve(server, on: serverLoop) { request in
            requestArrived.signal()
            _ = mayReply.wait(timeout: .now() + 30)
            return Self.echo(request)
        }

        let log = EventLog()
        let requestDone = DispatchSemaphore(value: 0)
        try client.perform {
            log.add("request")
            do {
                let reply = try server.sendRequest(msgid: 1, sendTimeout: 5, receiveTimeout: 30)
                log.add("reply \(reply.msgid)")
            } catch {
                log.add("failed: \(error)")
            }
            requestDone.signal()
        }
        #expect(requestArrived.wait(timeout: .now() + 10) == .success)
        #expect(waitUntil { clientLoop.isWaiting })
        let privateMode = clientLoop.currentMode
        #expect(privateMode != nil && privateMode != .default, "mode while waiting: \(String(describing: privateMode))")

        let passes = clientLoop.passesCompleted
        clientLoop.perform(inModes: [.default]) { log.add("default block") }
        try clientLoop.perform(afterDelay: 0, inModes: [.default]) { log.add("default timer") }
        clientLoop.perform { log.add("common block") }
        // Both woke the loop; it went through a pass in the private mode and sleeps again.
        #expect(waitUntil { clientLoop.passesCompleted > passes && clientLoop.isWaiting })
        #expect(clientLoop.currentMode == privateMode)
        #expect(log.all == ["request"])

        mayReply.signal()
        #expect(requestDone.wait(timeout: .now() + 10) == .success)
        #expect(waitUntil { log.count == 5 })
        #expect(Array(log.all.prefix(2)) == ["request", "reply 2"])
        #expect(Set(log.all.dropFirst(2)) == ["default block", "default timer", "common block"])
    }

    @Test("S-PORT-4: sendRequest throws .timedOut when no reply comes in time; a late reply to it does not answer the next request")
    func receiveTimeoutAndLateReply() throws {
        let (serverThread, serverLoop) = try makePortLoopThread("rq-late-server")
        defer { serverThread.stop() }
        let (client, _) = try makePortLoopThread("rq-late-client")
        defer { client.stop() }
        let server = try Port(transport: .inproc)
        defer { server.invalidate() }
        let unanswered = Locked<Port?>(nil)
        let lateSend = Locked<String>("not tried")
        try Self.serve(server, on: serverLoop) { request in
            if request.msgid == 1 {  // answered late: only when the next request comes
                unanswered.value = request.replyPort
                return nil
            }
            if let late = unanswered.value {
                do {
                    try late.send(msgid: 1001, before: portDeadline(1))
                    lateSend.value = "sent"
                } catch {
                    lateSend.value = "\(error)"
                }
            }
            return PortMessage(msgid: request.msgid + 2000)
        }

        let (firstError, waited, second) = try client.performAndWait { () throws -> (String?, Double, UInt32) in
            let start = MonotonicClock.now()
            var firstError: String?
            do {
                _ = try server.sendRequest(msgid: 1, sendTimeout: 5, receiveTimeout: 0.2)
            } catch let error as PortError {
                firstError = error.caseName
            }
            let waited = MonotonicClock.seconds(MonotonicClock.now() - start)
            let second = try server.sendRequest(msgid: 2, sendTimeout: 5, receiveTimeout: 30)
            return (firstError, waited, second.msgid)
        }
        #expect(firstError == "timedOut")
        #expect(waited >= 0.15, "timed out after \(waited) s, before the 0.2 s asked for")
        #expect(waited < 20)
        #expect(second == 2002, "the second request got \(second); the late reply is 1001 (late send: \(lateSend.value))")
    }

    @Test("S-PORT-4: sendRequest to a port whose queue is full throws .timedOut after the send timeout")
    func sendTimeoutOnFullPort() throws {
        let (client, _) = try makePortLoopThread("rq-full-client")
        defer { client.stop() }
        let server = try Port(transport: .inproc)  // never scheduled: it fills up
        defer { server.invalidate() }
        _ = try fillUntilTimeout(server)

        let (error, waited) = try client.performAndWait { () -> (String?, Double) in
            let start = MonotonicClock.now()
            var caseName: String?
            do {
                _ = try server.sendRequest(msgid: 1, sendTimeout: 0.1, receiveTimeout: 60)
            } catch let error as PortError {
                caseName = error.caseName
            }
            return (caseName, MonotonicClock.seconds(MonotonicClock.now() - start))
        }
        #expect(error == "timedOut")
        #expect(waited >= 0.08, "gave up after \(waited) s")
        #expect(waited < 30, "waited \(waited) s: the receive timeout, not the send timeout")
    }

    @Test("S-PORT-3: nested requests: a handler that itself makes a request to another port (two levels deep) gets its reply and answers the first")
    func nestedRequests() throws {
        let (threadA, loopA) = try makePortLoopThread("rq-nest-a")
        defer { threadA.stop() }
        let (threadB, loopB) = try makePortLoopThread("rq-nest-b")
        defer { threadB.stop() }
        let (threadC, loopC) = try makePortLoopThread("rq-nest-c")
        defer { threadC.stop() }
        let (client, _) = try makePortLoopThread("rq-nest-client")
        defer { client.stop() }
        let portA = try Port(transport: .inproc)
        let portB = try Port(transport: .inproc)
        let portC = try Port(transport: .inproc)
        defer { for port in [portA, portB, portC] { port.invalidate() } }

        @Sendable func text(_ message: PortMessage) -> String {
            message.dataComponents.first.map { String(decoding: $0, as: UTF8.self) } ?? "(none)"
        }
        try Self.serve(portC, on: loopC) { request in
            PortMessage(msgid: request.msgid, components: [.data(Data("C".utf8))])
        }
        try Self.serve(portB, on: loopB) { request in
            let inner = try? portC.sendRequest(msgid: request.msgid, sendTimeout: 5, receiveTimeout: 30)
            return PortMessage(msgid: request.msgid, components: [.data(Data("B<\(inner.map(text) ?? "failed")".utf8))])
        }
        try Self.serve(portA, on: loopA) { request in
            let inner = try? portB.sendRequest(msgid: request.msgid, sendTimeout: 5, receiveTimeout: 30)
            return PortMessage(msgid: request.msgid, components: [.data(Data("A<\(inner.map(text) ?? "failed")".utf8))])
        }

        let replies = try client.performAndWait {
            try (UInt32(1)...3).map { msgid in
                let reply = try portA.sendRequest(msgid: msgid, sendTimeout: 5, receiveTimeout: 30)
                return "\(reply.msgid):\(text(reply))"
            }
        }
        #expect(replies == ["1:A<B<C", "2:A<B<C", "3:A<B<C"])
    }

    // MARK: - async request

    @Test("S-PORT-3: await port.request(...) returns the reply, also for 20 requests at once")
    func asyncRequestReturnsReply() async throws {
        let (serverThread, serverLoop) = try makePortLoopThread("rq-async-server")
        defer { serverThread.stop() }
        let server = try Port(transport: .inproc)
        defer { server.invalidate() }
        try Self.serve(server, on: serverLoop, Self.echo)

        let reply = try await server.request(msgid: 7, components: [.data(Data("a".utf8))], timeout: .seconds(30))
        #expect(reply.msgid == 8)
        #expect(reply.dataComponents == [Data("a".utf8), Data("pong".utf8)])

        let answers = try await withThrowingTaskGroup(of: (UInt32, UInt32).self) { group in
            for msgid in UInt32(1000)..<1020 {
                group.addTask { (msgid, try await server.request(msgid: msgid, timeout: .seconds(30)).msgid) }
            }
            var answers: [UInt32: UInt32] = [:]
            for try await (msgid, answer) in group { answers[msgid] = answer }
            return answers
        }
        #expect(answers.count == 20)
        #expect(answers.allSatisfy { $0.value == $0.key + 1 })
    }

    @Test("S-PORT-4: await port.request(...) throws .timedOut when no reply comes, and when the send finds no room in time")
    func asyncRequestTimesOut() async throws {
        let (serverThread, serverLoop) = try makePortLoopThread("rq-async-silent")
        defer { serverThread.stop() }
        let silent = try Port(transport: .inproc)
        defer { silent.invalidate() }
        let heard = Counter()
        try Self.serve(silent, on: serverLoop) { _ in
            heard.increment()
            return nil
        }
        // Each request is made and timed in a task on a LoopThread: one on
        // the cooperative pool resumes only when the pool has a thread,
        // which other suites' exit tests held for minutes in a loaded
        // sanitizer run.
        let driver = LoopThread(name: "rq-async-driver")
        try driver.start()
        defer { driver.stop() }
        var (error, waited) = await Task(executorPreference: driver) { () async -> (PortError?, Double) in
            let start = MonotonicClock.now()
            let error = await portErrorThrown { _ = try await silent.request(msgid: 1, timeout: .seconds(0.2)) }
            return (error, MonotonicClock.seconds(MonotonicClock.now() - start))
        }.value
        #expect(error?.caseName == "timedOut")
        // Never early. The upper bound only guards against a hang.
        #expect(waited >= 0.15 && waited < 120, "timed out after \(waited) s")
        #expect(heard.value == 1)

        let full = try Port(transport: .inproc)  // never scheduled: it fills up
        defer { full.invalidate() }
        _ = try fillUntilTimeout(full)
        (error, waited) = await Task(executorPreference: driver) { () async -> (PortError?, Double) in
            let start = MonotonicClock.now()
            let error = await portErrorThrown { _ = try await full.request(msgid: 2, timeout: .seconds(0.2)) }
            return (error, MonotonicClock.seconds(MonotonicClock.now() - start))
        }.value
        #expect(error?.caseName == "timedOut")
        #expect(waited >= 0.15 && waited < 120, "timed out after \(waited) s")
    }

    // MARK: - messages()

    @Test("S-PORT-1, S-PORT-5: port.messages() yields the port's messages in order and finishes when the port is invalidated")
    func messageStream() async throws {
        let port = try Port(transport: .inproc)
        let stream = try port.messages()
        let count = 500
        let sender = SpawnedThread {
            for msgid in 0..<UInt32(count) { try port.send(msgid: msgid, components: [.data(Data([UInt8(msgid & 0xFF)]))], before: portDeadline()) }
        }
        let received = try await withThrowingTaskGroup(of: [PortMessage].self) { group in
            group.addTask {
                var received: [PortMessage] = []
                for await message in stream {
                    received.append(message)
                    if received.count == count { port.invalidate() }
                }
                return received
            }
            group.addTask {  // a watchdog, not a synchronisation
                try await Task.sleep(for: .seconds(60))
                throw TestFailure("the stream did not finish within 60 s")
            }
            defer { group.cancelAll() }
            return try await group.next() ?? []
        }
        try sender.join()
        #expect(received.map(\.msgid) == Array(0..<UInt32(count)))
        #expect(received.allSatisfy { $0.receivePort === port && $0.dataComponents == [Data([UInt8($0.msgid & 0xFF)])] })
        #expect(!port.isValid)
    }

    @Test("S-PORT-5: port.messages() of a port invalidated before any message finishes at once")
    func emptyMessageStreamFinishes() async throws {
        let port = try Port(transport: .inproc)
        let stream = try port.messages()
        port.invalidate()
        var count = 0
        for await _ in stream { count += 1 }
        #expect(count == 0)
    }
}
