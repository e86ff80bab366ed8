import Glibc

/// CLOCK_MONOTONIC in nanoseconds. The clock is the same for every process
/// on the machine, so an instant taken in a child (when it noticed a dead
/// peer) can be compared with one taken in the coordinator (when it sent
/// SIGKILL).
enum MonotonicTime {
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
    }

    static func nanoseconds(_ seconds: Double) -> UInt64 { UInt64(seconds * 1e9) }

    static func seconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e9 }
}
