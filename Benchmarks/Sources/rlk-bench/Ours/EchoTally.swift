import Synchronization

/// What the echo actors and the gRPC echo service share with whoever serves
/// them: how many calls they answered (a child's watchdog reads it, as the
/// rlk-peer child counts messages) and what `finish` does (a child process
/// ends its run; within one process, nothing).
final class EchoTally: Sendable {
    private let calls = Atomic<UInt64>(0)
    private let onFinish: @Sendable () -> Void

    init(onFinish: @escaping @Sendable () -> Void = {}) {
        self.onFinish = onFinish
    }

    /// One call answered. Relaxed: only a watchdog reads it, seconds later.
    @inline(__always)
    func count() { calls.add(1, ordering: .relaxed) }

    var answered: UInt64 { calls.load(ordering: .relaxed) }

    func finish() { onFinish() }
}
