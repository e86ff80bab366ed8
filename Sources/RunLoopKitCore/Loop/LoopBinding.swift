import Synchronization

/// The loop that a single-loop item (observer, socket source) belongs to.
/// Weak, so that an item never keeps a loop alive; behind a lock of its
/// own because items are invalidated from any thread. (A timer keeps its
/// loop behind a bit of its own state instead, `Timer.boundLoop`: one
/// word less in an object a program makes by the thousand.)
///
/// Stored inline in its item, the lock the standard library's `Mutex`:
/// objects of its own would each be one more cache miss when a change
/// reaches an item untouched for a while among many.
package struct LoopBinding: ~Copyable, Sendable {
    private let bound = Mutex(WeakLoop(nil))

    package init() {}

    package var loop: RunLoop? { bound.withLock { $0.loop } }

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
