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
    /// Counts the binding's changes (a bind, a clear): an owner that found
    /// the loop once can tell, with one load, that it is still the one
    /// bound, without the weak load and the loop's retain and release.
    private let changes = Atomic<UInt64>(0)

    package init() {}

    package var loop: RunLoop? { bound.withLock { $0.loop } }

    /// The number of changes so far. Read before `loop`, it says later
    /// whether `loop` still answers: unchanged, the same loop is bound,
    /// or, if that loop died meanwhile, none.
    package var generation: UInt64 { changes.load(ordering: .acquiring) }

    /// Binds to `loop`; false if the item already belongs to another live loop.
    package func bind(to loop: RunLoop) -> Bool {
        bound.withLock { bound in
            if let existing = bound.loop, existing !== loop { return false }
            bound.loop = loop
            changes.wrappingAdd(1, ordering: .releasing)
            return true
        }
    }

    func clear() {
        bound.withLock { bound in
            bound.loop = nil
            changes.wrappingAdd(1, ordering: .releasing)
        }
    }
}
