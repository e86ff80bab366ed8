import CBenchPeers

/// CLOCK_MONOTONIC in nanoseconds: every time rlk-bench measures is a
/// difference of two of these (never the wall clock, which may be adjusted).
@inline(__always)
func monotonicNanoseconds() -> UInt64 { bench_now_ns() }

/// Seconds elapsed since `start` (a `monotonicNanoseconds()` value).
func secondsSince(_ start: UInt64) -> Double {
    Double(monotonicNanoseconds() &- start) / 1e9
}
