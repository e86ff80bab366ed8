// Cancelling `LoopThread.performAndAwait`: S-ASYNC-1. The awaiting caller
// gets CancellationError at once, as from Task.sleep. The choice for the
// work itself (docs/semantics.md): a task still queued is withdrawn and
// never runs; one that has started finishes on the thread, and its result
// is dropped.
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Cancelling performAndAwait (S-ASYNC-1)", .blocksThreads)
struct PerformAndAwaitCancellationTests {
    static func started(_ name: String) throws -> LoopThread {
        let worker = LoopThread(name: name)
        try worker.start()
        return worker
    }

    /// Holds `worker`'s loop in a block until the returned semaphore is
    /// signalled; returns once the block runs.
    static func hold(_ worker: LoopThread) async throws -> DispatchSemaphore {
        let (held, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        try worker.perform { held.signal(); release.wait() }
        await ExecutorTests.wait(for: held)
        return release
    }

    @Test("S-ASYNC-1: performAndAwait cancelled while its task is queued throws CancellationError, and the task never runs")
    func cancelledWhileQueued() async throws {
        let worker = try Self.started("cx-queued")
        defer { worker.stop() }
        let release = try await Self.hold(worker)
        let ran = Locked(false)
        let waiting = Task { try await worker.performAndAwait { ran.withLock { $0 = true } } }
        #expect(await ExecutorTests.waitUntilQueued(1, on: worker))
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        release.signal()
        // Everything queued after it has run: so would it have.
        try await worker.performAndAwait {}
        #expect(!ran.value, "a withdrawn task ran")
    }

    @Test("S-ASYNC-1: performAndAwait cancelled while its task runs throws CancellationError at once; the task finishes on the thread, its result dropped")
    func cancelledWhileRunning() async throws {
        let worker = try Self.started("cx-running")
        defer { worker.stop() }
        let (running, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        let finished = Locked(false)
        let waiting = Task {
            try await worker.performAndAwait { () -> Int in
                running.signal()
                release.wait()
                finished.withLock { $0 = true }
                return 42
            }
        }
        await ExecutorTests.wait(for: running)
        waiting.cancel()
        // Answered while the task still runs: the caller does not wait for it.
        await #expect(throws: CancellationError.self) { _ = try await waiting.value }
        #expect(!finished.value)
        release.signal()
        try await worker.performAndAwait {}
        #expect(finished.value, "a started task is not interrupted")
    }

    @Test("S-ASYNC-1: performAndAwait from a task cancelled before the call queues nothing")
    func cancelledBeforeTheCall() async throws {
        let worker = try Self.started("cx-early")
        defer { worker.stop() }
        let release = try await Self.hold(worker)
        let ran = Locked(false)
        let waiting = Task {
            while !Task.isCancelled { try? await Task.sleep(for: .milliseconds(1)) }
            return try await worker.performAndAwait { ran.withLock { $0 = true } }
        }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        #expect(ExecutorTests.queued(on: worker) == 0)
        release.signal()
        try await worker.performAndAwait {}
        #expect(!ran.value)
    }
}
