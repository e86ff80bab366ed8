import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A request's continuation (`ResumeOnce`), resumed by whichever of reply,
/// timeout, port death or cancellation comes first, and the clean-ups
/// registered with it, run once when it does. An outcome that comes before
/// the continuation is armed is kept and resumes it as it is armed.
package final class AsyncOutcome: Sendable {
    private struct State {
        var finished = false
        var cleanups: [@Sendable () -> Void] = []
    }

    private let resume = ResumeOnce<PortMessage>()
    private let state = Locked(State())

    package init() {}

    package func arm(_ continuation: CheckedContinuation<PortMessage, any Error>) { resume.arm(continuation) }

    package func onFinish(_ body: @escaping @Sendable () -> Void) {
        let runNow = state.withLock { state -> Bool in
            if state.finished { return true }
            state.cleanups.append(body)
            return false
        }
        if runNow { body() }
    }

    package func finish(_ outcome: Result<PortMessage, PortError>) {
        finish(outcome.mapError { $0 as any Error })
    }

    /// The awaiting task was cancelled (S-ASYNC-1).
    /// Finishes with an error of any type (the first outcome wins).
    package func fail(_ error: any Error) {
        finish(Result<PortMessage, any Error>.failure(error))
    }

    package func cancel() {
        finish(Result<PortMessage, any Error>.failure(CancellationError()))
    }

    /// Whether the outcome came (and the clean-ups ran).
    package var isFinished: Bool { state.withLock { $0.finished } }

    private func finish(_ outcome: Result<PortMessage, any Error>) {
        // The clean-ups first, then the caller resumes.
        let cleanups: [@Sendable () -> Void]? = state.withLock { state in
            guard !state.finished else { return nil }
            state.finished = true
            defer { state.cleanups = [] }
            return state.cleanups
        }
        guard let cleanups else { return }
        for cleanup in cleanups { cleanup() }
        resume.finish(outcome)
    }
}
