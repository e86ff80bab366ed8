import Glibc

/// A one-shot result that one thread fills and another waits for, with an
/// optional deadline: what `performAndWait` blocks on. Filling it twice keeps
/// the first result (first call wins).
package final class Completion<Value: Sendable>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by mutex.
    private var result: Result<Value, any Error>?

    package init() {
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func fill(_ value: Result<Value, any Error>) {
        pthread_mutex_lock(mutex)
        if result == nil {
            result = value
            pthread_cond_broadcast(condition)
        }
        pthread_mutex_unlock(mutex)
    }

    /// Waits until filled, or until the monotonic `deadline` (nanoseconds);
    /// nil means the deadline passed first.
    package func wait(until deadline: UInt64 = MonotonicClock.never) -> Result<Value, any Error>? {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while result == nil {
            if deadline == MonotonicClock.never {
                pthread_cond_wait(condition, mutex)
            } else {
                var spec = timespec(tv_sec: Int(deadline / 1_000_000_000), tv_nsec: Int(deadline % 1_000_000_000))
                if pthread_cond_timedwait(condition, mutex, &spec) == ETIMEDOUT && result == nil { return nil }
            }
        }
        return result
    }
}
