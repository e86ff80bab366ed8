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
    @usableFromInline var state: State

    @inlinable
    package init(_ initial: State) { state = initial }

    /// Runs `body` with the state, holding the lock.
    @inlinable @inline(__always)
    package func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
