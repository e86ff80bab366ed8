import Glibc
import RunLoopKit

/// `RLK_BENCH_LOOP_SCHEDULING=latency-sensitive`: RunLoopKit's side asks for
/// the short time slice (`LoopThread.Scheduling.latencySensitive`) on the
/// benchmark's loop threads and the echo child, so one binary can compare
/// the slice against the default in the same hour.
enum BenchLoopScheduling {
    static let chosen: LoopThread.Scheduling =
        getenv("RLK_BENCH_LOOP_SCHEDULING").map { String(cString: $0) == "latency-sensitive" } ?? false
        ? .latencySensitive : .inherited
}
