internal import CLinuxSupport
import Glibc

/// A plain pthread mutex. RunLoopKit names, beside every mutable stored
/// property, the lock that guards it, and never calls user code while holding
/// one (docs/design.md, "Locks and user code"). ThreadSanitizer understands pthread mutexes natively.
///
/// Inlinable for the ports' message path, and so public behind the
/// `RunLoopKitInternals` SPI, as `Locked` is.
@_spi(RunLoopKitInternals)
public final class Lock: @unchecked Sendable {
    // Heap-allocated so that the mutex never moves (pthread mutexes must not).
    @usableFromInline let mutex: UnsafeMutablePointer<Glibc.pthread_mutex_t>

    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed with \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Locks, waiting at most until the monotonic `deadline` (nanoseconds);
    /// false if the deadline passed first. Pair a true result with `unlock()`.
    package func lock(until deadline: UInt64) -> Bool {
        if Glibc.pthread_mutex_trylock(mutex) == 0 { return true }
        if deadline == MonotonicClock.never { Glibc.pthread_mutex_lock(mutex); return true }
        return rlk_mutex_lock_until(mutex, deadline) == 0
    }

    /// Locks if the lock is free, without waiting; true if it did. Pair a
    /// true result with `unlock()`.
    @inlinable
    package func tryLock() -> Bool { Glibc.pthread_mutex_trylock(mutex) == 0 }

    /// Locks, waiting as long as it takes. Pair it with `unlock()`.
    @inlinable
    package func lock() { Glibc.pthread_mutex_lock(mutex) }

    @inlinable
    package func unlock() { Glibc.pthread_mutex_unlock(mutex) }

    @inlinable @inline(__always)
    package func withLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        Glibc.pthread_mutex_lock(mutex)
        defer { Glibc.pthread_mutex_unlock(mutex) }
        return try body()
    }
}
