import Glibc

/// CLOCK_MONOTONIC in nanoseconds: the clock the tap stamps its events with.
enum MonotonicNow {
    static func nanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}
