import Glibc
import RunLoopKit

/// `RLK_BENCH_LOOP_SCHEDULING=inherited`: RunLoopKit's side keeps the
/// kernel's default time slice (`LoopThread.Scheduling.inherited`) on the
/// benchmark's loop threads and the echo child, so one binary can compare
/// the slice against none in the same hour.
enum BenchLoopScheduling {
    static let chosen: LoopThread.Scheduling =
        getenv("RLK_BENCH_LOOP_SCHEDULING").map { String(cString: $0) == "inherited" } ?? false
        ? .inherited : .latencySensitive
}
