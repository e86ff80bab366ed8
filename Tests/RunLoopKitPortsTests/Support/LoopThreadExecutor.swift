// Async code the parent runs while a child lives, on a LoopThread instead
// of the cooperative pool (see ParentSide).
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

/// A Swift concurrency executor that runs its jobs on a `LoopThread`: async
/// code the parent runs while a child lives (an async `request`) does not
/// need the cooperative pool, which the exit test holds.
final class LoopThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: LoopThread is Sendable; nothing else is stored.
    let thread: LoopThread

    init(name: String) throws {
        thread = LoopThread(name: name)
        try thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        do {
            try thread.perform { job.runSynchronously(on: executor) }
        } catch {
            fatalError("LoopThreadExecutor \(thread.name): the thread refused a job: \(error)")
        }
    }

    /// Starts `body` as a task that runs on this executor's thread; the
    /// returned `ParentSide`-like handle gives its result.
    func start<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> AsyncParentSide<T> {
        let handle = AsyncParentSide<T>()
        Task(executorPreference: self) {
            do { handle.complete(.success(try await body())) } catch { handle.complete(.failure(error)) }
        }
        return handle
    }

    func stop() { thread.stopAfterDraining() }
}

/// The result of async work started on a `LoopThreadExecutor`.
final class AsyncParentSide<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `result` is Locked.
    private let result = Locked<Result<T, any Error>?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    func complete(_ outcome: Result<T, any Error>) {
        result.value = outcome
        finished.signal()
    }

    /// Blocks until the work is done (safety net: `timeout`); nil if it is not.
    func wait(timeout: Double = 60) -> Result<T, any Error>? {
        guard finished.wait(timeout: .now() + timeout) == .success else { return nil }
        return result.value
    }
}
