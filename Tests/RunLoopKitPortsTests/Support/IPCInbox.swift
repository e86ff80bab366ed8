// A receiving port on a thread of its own, and the counter that threads
// and async tests wait on for what has arrived.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

// MARK: - Waiting for counts

/// A counter that threads can wait on: a `CondLocked` count, with the
/// waits the cross-process tests need.
final class IPCCounter: Sendable {
    private let count = CondLocked(0)

    func add(_ amount: Int = 1) { count.update { $0 += amount } }

    var current: Int { count.value }

    /// `wait(atLeast:timeout:)` on a thread of its own, for async tests: a
    /// blocked Swift concurrency thread would hold up the tests running in
    /// parallel (there are as many as cores).
    func arrival(atLeast target: Int, timeout: Double = 30) async -> Bool {
        (try? await PortProcess.onThread("rlkt-wait") { self.wait(atLeast: target, timeout: timeout) }) ?? false
    }

    /// Waits until the count is at least `target`, for `timeout` seconds at
    /// most (a safety net). True if it got there.
    func wait(atLeast target: Int, timeout: Double = 30) -> Bool {
        count.wait(timeout: timeout) { $0 >= target }
    }
}

// MARK: - A receiving port on a thread of its own

/// A local port receiving on a `LoopThread` of its own, which keeps every
/// message (unless told not to) and counts them. The optional `handler` runs
/// first, on the loop thread, so that once `wait(forCount:)` sees a message,
/// what the handler did for it is done.
final class IPCInbox: Sendable {
    let port: Port
    let thread: LoopThread
    private let received = Locked<[PortMessage]>([])
    private let counter = IPCCounter()

    init(
        _ label: String, transport: Port.Transport = .ipc, keepMessages: Bool = true,
        handler: (@Sendable (PortMessage) -> Void)? = nil
    ) throws {
        thread = LoopThread(name: label)
        try thread.start()
        port = try Port(transport: transport)
        let received = self.received
        let counter = self.counter
        port.setMessageHandler { message in
            handler?(message)
            if keepMessages { received.withLock { $0.append(message) } }
            counter.add()
        }
        guard let loop = thread.runLoop else { throw TestFailure("LoopThread \(label) has no loop") }
        try port.schedule(in: loop, forMode: .default)
    }

    var messages: [PortMessage] { received.value }
    var count: Int { counter.current }

    /// Blocks until `count` messages have arrived (`timeout` is a safety net).
    @discardableResult
    func wait(forCount count: Int, timeout: Double = 30) -> Bool { counter.wait(atLeast: count, timeout: timeout) }

    /// Awaits `count` messages without blocking a Swift concurrency thread.
    func arrival(ofCount count: Int, timeout: Double = 30) async -> Bool {
        await counter.arrival(atLeast: count, timeout: timeout)
    }

    /// Invalidates the port (releasing its names) and stops the thread.
    func close() {
        port.invalidate()
        thread.stop()
    }
}
