import Synchronization

/// Runs `body` in a task (preferring `executor`, if given) and blocks the
/// calling thread until it is done, for the set-up and tear-down of the
/// async sides (a lookup, a client's shutdown): Contender's methods are
/// synchronous. Throws what `body` threw, or after `seconds`.
func awaitBlocking<T: Sendable>(seconds: Double, what: @autoclosure () -> String, on executor: (any TaskExecutor)? = nil,
                                _ body: @escaping @Sendable () async throws -> T) throws -> T {
    let outcome = Mutex<Result<T, any Error>?>(nil)
    let gate = Gate()
    Task(executorPreference: executor) {
        let result: Result<T, any Error>
        do { result = .success(try await body()) } catch { result = .failure(error) }
        outcome.withLock { $0 = result }
        gate.open()
    }
    try gate.wait(seconds: seconds, for: what())
    guard let result = outcome.withLock({ $0 }) else { throw BenchError("\(what()): no outcome") }
    return try result.get()
}
