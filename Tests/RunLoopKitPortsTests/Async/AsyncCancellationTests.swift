// Cancellation of async requests: S-ASYNC-1. A request to a port whose
// server hears it and never answers is cancelled while it waits, before it
// is made, and racing its reply; each time the caller's `catch is
// CancellationError` works as it does for Task.sleep, nothing the request
// registered stays behind, and a reply that comes later is dropped.
import Glibc
import Testing
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("Cancelling async requests (S-ASYNC-1)", .blocksThreads)
struct AsyncCancellationTests {
    /// A port served on a loop thread of its own, whose handler keeps each
    /// request's reply port and answers nothing until told.
    final class SilentServer: Sendable {
        let thread: LoopThread
        let port: Port
        let replyPorts = Locked<[Port]>([])
        let heard = Counter()

        init(_ name: String) throws {
            let (thread, loop) = try makePortLoopThread(name)
            self.thread = thread
            port = try Port(transport: .inproc)
            port.setMessageHandler { [replyPorts, heard] request in
                if let reply = request.replyPort { replyPorts.withLock { $0.append(reply) } }
                heard.increment()
            }
            try port.schedule(in: loop, forMode: .default)
        }

        func stop() {
            port.invalidate()
            thread.stop()
        }
    }

    /// How many invalidation handlers `port` holds: a request registers one
    /// while it waits.
    static func handlerCount(_ port: Port) -> Int {
        port.state.withLock { $0.invalidationHandlers.count }
    }

    @Test("S-ASYNC-1: a request cancelled while it waits for its reply throws CancellationError at once; its reply port is invalidated, its handler removed, and a later reply is dropped")
    func cancelledWhileWaiting() async throws {
        let server = try SilentServer("cx-wait")
        defer { server.stop() }
        // The request, the wait for the server to hear it and the
        // cancellation all run on a LoopThread: in a loaded sanitizer run
        // other suites' exit tests hold the cooperative pool for minutes,
        // and a request started there may not even be sent within a bound.
        let (registered, outcome, secondsToEnd) = try await onLoopThread("cx-wait-driver") { driver in
            let request = Task(executorPreference: driver) { try await server.port.request(msgid: 7, timeout: .seconds(300)) }
            // Cancel once the server has the request (and so the reply
            // port); the bound is a safety net, not a timing.
            let limit = MonotonicClock.instant(secondsFromNow: 120)
            while server.heard.value == 0 && MonotonicClock.now() < limit { try? await Task.sleep(for: .milliseconds(1)) }
            let registered = Self.handlerCount(server.port)
            let cancelledAt = MonotonicClock.now()
            request.cancel()
            let outcome = await request.result
            return (registered, outcome, MonotonicClock.seconds(MonotonicClock.now() - cancelledAt))
        }
        #expect(registered == 1, "the waiting request registered \(registered) invalidation handler(s)")
        switch outcome {
        case .success: Issue.record("the cancelled request returned a reply")
        case let .failure(error): #expect(error is CancellationError, "expected CancellationError, got \(error)")
        }
        // Not a timing test: 300 s was the request's own limit.
        #expect(secondsToEnd < 60)
        #expect(Self.handlerCount(server.port) == 0, "the request's invalidation handler stayed registered")
        let reply = try #require(server.replyPorts.value.first)
        // The reply port is gone: the late reply cannot be delivered.
        let late = portErrorThrown { try reply.send(PortMessage(msgid: 8), before: portDeadline()) }
        #expect(late != nil)
    }

    @Test("S-ASYNC-1: a request whose task is cancelled before the call sends nothing and throws CancellationError")
    func cancelledBeforeTheCall() async throws {
        let server = try SilentServer("cx-before")
        defer { server.stop() }
        let asked = Locked(false)
        let request = Task {
            // Wait for the cancellation, then ask.
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
            asked.withLock { $0 = true }
            return try await server.port.request(msgid: 7, timeout: .seconds(300))
        }
        request.cancel()
        await #expect(throws: CancellationError.self) { _ = try await request.value }
        #expect(asked.value, "the task asked after its cancellation")
        // Give a send that should not have happened time to arrive.
        _ = try await server.thread.performAndAwait { RunLoop.current.run(mode: .default, seconds: 0.05) }
        #expect(server.heard.value == 0, "a cancelled task sent its request")
        #expect(Self.handlerCount(server.port) == 0)
    }

    @Test("S-ASYNC-1: the outcome of a request that comes before it is armed (a cancellation racing the await) resumes it as it is armed")
    func outcomeBeforeArmIsKept() async throws {
        let outcome = AsyncOutcome()
        outcome.cancel()
        let cleanedUp = Counter()
        outcome.onFinish { cleanedUp.increment() }
        #expect(cleanedUp.value == 1, "a clean-up registered after the outcome runs at once")
        await #expect(throws: CancellationError.self) {
            _ = try await withCheckedThrowingContinuation { outcome.arm($0) }
        }
    }

    @Test("S-ASYNC-1: a thousand requests cancelled at random points each end with CancellationError or their reply, and leave no handler behind")
    func manyCancelledRequests() async throws {
        let (thread, loop) = try makePortLoopThread("cx-many")
        defer { thread.stop() }
        let server = try Port(transport: .inproc)
        defer { server.invalidate() }
        // Answers every other request.
        server.setMessageHandler { request in
            guard request.msgid % 2 == 0, let reply = request.replyPort else { return }
            try? reply.send(PortMessage(msgid: request.msgid), before: portDeadline())
        }
        try server.schedule(in: loop, forMode: .default)
        var outcomes = (replies: 0, cancelled: 0)
        for batch in 0..<10 {
            let tasks = (0..<100).map { index in
                Task { try await server.request(msgid: UInt32(batch * 100 + index), timeout: .seconds(300)) }
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...3)))
            for task in tasks { task.cancel() }
            for task in tasks {
                do {
                    _ = try await task.value
                    outcomes.replies += 1
                } catch is CancellationError {
                    outcomes.cancelled += 1
                }
            }
        }
        #expect(outcomes.replies + outcomes.cancelled == 1000)
        #expect(outcomes.cancelled >= 500, "the unanswered half can only end cancelled: \(outcomes)")
        #expect(Self.handlerCount(server) == 0)
    }

    @Test("S-ASYNC-1: cancelling the task that iterates port.messages() ends the iteration, and the port stops feeding the stream: later messages wait in the port for its next handler")
    func cancelledStreamStopsThePort() async throws {
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let stream = try port.messages()
        let got = Locked<[UInt32]>([])
        // The consumer and the wait for it on a LoopThread: in a loaded
        // sanitizer run the cooperative pool can be held for minutes.
        let driver = LoopThread(name: "cx-stream-driver")
        try driver.start()
        defer { driver.stop() }
        let consumer = Task(executorPreference: driver) {
            var count = 0
            for await message in stream {
                count += 1
                got.withLock { $0.append(message.msgid) }
            }
            return count
        }
        try port.send(PortMessage(msgid: 1), before: portDeadline())
        try await Task(executorPreference: driver) {
            let limit = MonotonicClock.instant(secondsFromNow: 120)
            while got.value.isEmpty && MonotonicClock.now() < limit { try await Task.sleep(for: .milliseconds(1)) }
        }.value
        #expect(got.value == [1])
        consumer.cancel()
        #expect(await consumer.value == 1, "the iteration did not end when its task was cancelled")
        // The port's loop thread has taken it off and cleared its handler.
        _ = try AsyncPorts.loop().performAndWait {}
        for msgid in UInt32(2)...4 { try port.send(PortMessage(msgid: msgid), before: portDeadline()) }
        let (thread, loop) = try makePortLoopThread("cx-stream")
        defer { thread.stop() }
        let later = Locked<[UInt32]>([])
        port.setMessageHandler { message in later.withLock { $0.append(message.msgid) } }
        try port.schedule(in: loop, forMode: .default)
        try await Task(executorPreference: driver) {
            let limit = MonotonicClock.instant(secondsFromNow: 120)
            while later.value.count < 3 && MonotonicClock.now() < limit { try await Task.sleep(for: .milliseconds(1)) }
        }.value
        #expect(later.value == [2, 3, 4])
    }
}
