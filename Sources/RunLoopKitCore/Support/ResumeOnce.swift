/// A continuation resumed exactly once, by whichever comes first: the
/// work's result, its loop going, or the awaiting task's cancellation
/// (S-ASYNC-1). An outcome that comes before the continuation is armed (a
/// cancellation handler runs at once for a task cancelled already) is kept
/// and resumes it as it is armed: never lost, never twice.
package final class ResumeOnce<T: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var result: Result<T, any Error>?
    }

    private let state = Locked(State())

    package init() {}

    package func arm(_ continuation: CheckedContinuation<T, any Error>) {
        let early: Result<T, any Error>? = state.withLock { state in
            guard let result = state.result else {
                state.continuation = continuation
                return nil
            }
            return result
        }
        if let early { continuation.resume(with: early) }
    }

    /// Resumes with `result` unless something came first; false then.
    @discardableResult
    package func finish(_ result: Result<T, any Error>) -> Bool {
        let (continuation, first): (CheckedContinuation<T, any Error>?, Bool) = state.withLock { state in
            guard state.result == nil else { return (nil, false) }
            state.result = result
            defer { state.continuation = nil }
            return (state.continuation, true)
        }
        continuation?.resume(with: result)
        return first
    }
}
