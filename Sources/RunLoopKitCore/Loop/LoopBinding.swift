/// The loop that a single-loop item (timer, observer, socket source) belongs
/// to. Weak, so that an item never keeps a loop alive; behind a lock of its
/// own because items are invalidated from any thread.
package final class LoopBinding: Sendable {
    private let bound = Locked(WeakLoop(nil))

    var loop: RunLoop? { bound.withLock { $0.loop } }

    /// Binds to `loop`; false if the item already belongs to another live loop.
    package func bind(to loop: RunLoop) -> Bool {
        bound.withLock { bound in
            if let existing = bound.loop, existing !== loop { return false }
            bound.loop = loop
            return true
        }
    }

    func clear() { bound.withLock { $0.loop = nil } }
}
