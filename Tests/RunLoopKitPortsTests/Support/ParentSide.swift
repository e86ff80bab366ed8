// Work a test process does while one of its exit-test children runs, on a
// thread of its own (see PortProcess+CrossProcess.swift, "The parent while
// a child runs").
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

private final class IPCThreadJob: @unchecked Sendable {
    // @unchecked Sendable: handed to the new thread once, used there only.
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

// MARK: - The parent's side while a child runs

/// Work a test process does *while* one of its exit-test children runs.
///
/// Swift Testing awaits an exit test with blocking reads of the child's
/// pipes (its standard error and the back channel) on Swift concurrency
/// threads; on this 2-core machine that is the whole cooperative pool, so
/// no `await` in the test process makes progress until the child exits.
/// Whatever the parent must do during the child's life (look up the
/// child's port, send to it, kill it, time its death) therefore runs on a
/// thread of its own, started before the exit test, and the test collects
/// the result after the child has exited.
final class ParentSide<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `state` is Locked; the body runs once on its thread.
    private enum State {
        case running([CheckedContinuation<T, any Error>])
        case done(Result<T, any Error>)
    }

    private let state = Locked<State>(.running([]))
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread now.
    init(_ name: String = "rlkt-parent", _ body: @escaping @Sendable () throws -> T) {
        let job = IPCThreadJob { [self] in
            setCurrentThreadName(name)
            complete(Result { try body() })
        }
        var handle = pthread_t()
        let context = Unmanaged.passRetained(job).toOpaque()
        let rc = pthread_create(&handle, nil, { context in
            Unmanaged<IPCThreadJob>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        if rc == 0 {
            pthread_detach(handle)
        } else {
            Unmanaged<IPCThreadJob>.fromOpaque(context).release()
            complete(.failure(TestFailure("pthread_create failed: \(rc)")))
        }
    }

    private func complete(_ result: Result<T, any Error>) {
        let waiters: [CheckedContinuation<T, any Error>] = state.withLock { state in
            guard case let .running(waiters) = state else { return [] }
            state = .done(result)
            return waiters
        }
        finished.signal()
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// What the body returned or threw.
    func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let done: Result<T, any Error>? = state.withLock { state in
                switch state {
                case let .running(waiters):
                    state = .running(waiters + [continuation])
                    return nil
                case let .done(result):
                    return result
                }
            }
            if let done { continuation.resume(with: done) }
        }
    }

    /// What the body returned or threw, once it is done.
    var finishedResult: Result<T, any Error>? {
        state.withLock { state in
            if case let .done(result) = state { return result }
            return nil
        }
    }

    /// Blocks until the body is done (for a thread that is not a Swift
    /// concurrency thread); false after `timeout` seconds.
    func wait(timeout: Double = 60) -> Bool { finished.wait(timeout: .now() + timeout) == .success }
}

/// Reads the result of a finished `ParentSide` from a plain thread.
enum ParentSideResult {
    static func take<T: Sendable>(_ side: ParentSide<T>) throws -> T {
        guard let result = side.finishedResult else { throw TestFailure("the thread has not finished") }
        return try result.get()
    }
}
