import Glibc
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Resumes a continuation once, whichever of reply, timeout or port death
/// comes first, and runs the clean-ups registered with it.
final class AsyncOutcome: Sendable {
    private struct State {
        var continuation: CheckedContinuation<PortMessage, any Error>?
        var result: Result<PortMessage, PortError>?
        var cleanups: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())

    func arm(_ continuation: CheckedContinuation<PortMessage, any Error>) {
        state.withLock { $0.continuation = continuation }
    }

    func onFinish(_ body: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.result != nil { return true }
            state.cleanups.append(body)
            return false
        }
        if runNow { body() }
    }

    func finish(_ outcome: Result<PortMessage, PortError>) {
        let (continuation, cleanups) = state.withLock { state -> (CheckedContinuation<PortMessage, any Error>?, [@Sendable () -> Void]) in
            guard state.result == nil else { return (nil, []) }
            state.result = outcome
            defer { state.continuation = nil; state.cleanups = [] }
            return (state.continuation, state.cleanups)
        }
        for cleanup in cleanups { cleanup() }
        continuation?.resume(with: outcome.mapError { $0 as any Error })
    }
}
