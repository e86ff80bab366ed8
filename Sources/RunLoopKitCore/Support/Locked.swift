/// State that only its lock can reach: the compiler sees to it that
/// `value` is read and changed inside `withLock` and nowhere else.
///
/// Why not `Synchronization.Mutex`: its contended path is a futex that
/// ThreadSanitizer cannot see, and the whole suite must pass under
/// ThreadSanitizer (docs/design.md, "Locks and user code"). A pthread mutex
/// (`Lock`) gives the same guarantee and TSan understands it.
///
/// Never call a user's closure inside `withLock` (docs/design.md, "Locks and
/// user code"): copy what the callout needs under the lock, then call it after.
///
/// Shared with the ports, which take these locks on their message path,
/// where an unspecialised generic call across the module boundary would
/// cost more than the lock itself: so it is inlinable, and for that public
/// behind the `RunLoopKitInternals` SPI, which users never import (Swift 6.3
/// does not inline `@inlinable` members of a `package` type across modules:
/// docs/design.md, "Modules").
@_spi(RunLoopKitInternals)
public final class Locked<State>: @unchecked Sendable {
    // @unchecked Sendable: `state` is touched only while `lock` is held.
    @usableFromInline let lock = Lock()
    // The state lives in memory of its own, reached through a pointer: an
    // access through a pointer is not checked for exclusivity at run time,
    // where a stored property of a class that other modules can reach is,
    // at every `withLock`; `@exclusivity(unchecked)` on the property would
    // copy the state in and out (docs/performance.md, "Tried and not
    // kept"). Touched only inside `withLock`, with `lock` held, so no two
    // accesses overlap.
    // U-LOCKED (docs/unsafe-sites.md).
    @usableFromInline let state: UnsafeMutablePointer<State>

    @inlinable
    package init(_ initial: State) {
        state = .allocate(capacity: 1)
        state.initialize(to: initial)
    }

    deinit {
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// Runs `body` with the state, holding the lock.
    @inlinable @inline(__always)
    package func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        // U-LOCKED (docs/unsafe-sites.md).
        return try body(&state.pointee)
    }
}
