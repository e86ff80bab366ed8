import Glibc
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Resumes a continuation once, whichever of reply, timeout, port death or
/// cancellation comes first, and runs the clean-ups registered with it. An
/// outcome that comes before the continuation is armed (a task cancelled
/// before it awaited) is kept, and resumes it as it is armed: never lost.
final class AsyncOutcome: Sendable {
    private struct State {
        var continuation: CheckedContinuation<PortMessage, any Error>?
        var result: Result<PortMessage, any Error>?
        var cleanups: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())

    /// Arms `continuation`, or resumes it at once if the outcome came first.
    func arm(_ continuation: CheckedContinuation<PortMessage, any Error>) {
        let early: Result<PortMessage, any Error>? = state.withLock { state in
            guard let result = state.result else {
                state.continuation = continuation
                return nil
            }
            return result
        }
        if let early { continuation.resume(with: early) }
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
        finish(outcome.mapError { $0 as any Error })
    }

    /// The awaiting task was cancelled (S-ASYNC-1).
    func cancel() {
        finish(Result<PortMessage, any Error>.failure(CancellationError()))
    }

    /// Whether the outcome came (and the clean-ups ran).
    var isFinished: Bool { state.withLock { $0.result != nil } }

    private func finish(_ outcome: Result<PortMessage, any Error>) {
        let (continuation, cleanups) = state.withLock { state -> (CheckedContinuation<PortMessage, any Error>?, [@Sendable () -> Void]) in
            guard state.result == nil else { return (nil, []) }
            state.result = outcome
            defer { state.continuation = nil; state.cleanups = [] }
            return (state.continuation, state.cleanups)
        }
        for cleanup in cleanups { cleanup() }
        continuation?.resume(with: outcome)
    }
}
