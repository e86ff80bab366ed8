// The example's own checks. Each prints what it proved; a failed one makes
// the program exit 1, so that a regression of either recipe shows in the exit
// status, not only in the output. (A name the recipes stop covering shows
// earlier: the example no longer compiles.)
import Synchronization

let failedChecks = Atomic<Int>(0)

func check(_ condition: Bool, _ what: String) {
    print("  \(condition ? "ok" : "FAILED"): \(what)")
    if !condition { failedChecks.add(1, ordering: .relaxed) }
}

/// The last value a handler stored. The message handlers of both recipes
/// store the message they receive here; they are @Sendable closures, so the
/// store is shared through a lock, not a captured variable.
final class Inbox<Value: Sendable>: Sendable {
    private let stored = Mutex<Value?>(nil)
    func store(_ value: Value) { stored.withLock { $0 = value } }
    var value: Value? { stored.withLock { $0 } }
}
