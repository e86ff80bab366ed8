import Synchronization

/// The child's statistics, updated from every thread of the process.
final class ChildCounters: Sendable {
    private let values = Mutex(ChildStatistics())

    func update(_ body: (inout ChildStatistics) -> Void) { values.withLock { body(&$0) } }

    var snapshot: ChildStatistics { values.withLock { $0 } }
}
