import RunLoopKit

/// Runs `body` in a task on a LoopThread of its own (`name`), stopped
/// after: for a test whose awaits are timed or must not wait on Swift's
/// cooperative pool, which other suites' exit tests can hold for minutes
/// in a loaded sanitizer run (docs/contributing.md).
package func onLoopThread<T: Sendable>(
    _ name: String, _ body: @escaping @Sendable (LoopThread) async throws -> T
) async throws -> T {
    let driver = LoopThread(name: name)
    try driver.start()
    defer { driver.stop() }
    return try await Task(executorPreference: driver) { try await body(driver) }.value
}
