import Glibc

/// State that only its lock can reach: the compiler sees to it that
/// `value` is read and changed inside `withLock` and nowhere else.
///
/// Why not `Synchronization.Mutex`: its contended path is a futex that
/// ThreadSanitizer cannot see, and the whole suite must pass under
/// ThreadSanitizer (DESIGN.md, decided before building, 4). A pthread mutex
/// gives the same guarantee and TSan understands it. The mutex is
/// heap-allocated because a pthread mutex must never move.
///
/// Never call a user's closure inside `withLock` (STYLE.md): copy what the
/// callout needs under the lock, then call it after.
final class Locked<State>: @unchecked Sendable {
    // @unchecked Sendable: `state` is touched only between lock and unlock.
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var state: State

    init(_ initial: State) {
        state = initial
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        let rc = pthread_mutex_init(mutex, nil)
        precondition(rc == 0, "pthread_mutex_init failed with \(rc)")
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the state, holding the lock.
    @inline(__always)
    func withLock<T, E: Error>(_ body: (inout State) throws(E) -> T) throws(E) -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}
