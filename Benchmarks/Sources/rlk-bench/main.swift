// rlk-bench: RunLoopKit side by side with its peers. See BenchMain and
// Benchmarks/README.md; docs/performance.md has the results of a full run.
//
// Nothing here awaits: the main thread must stay the main thread, because
// the ipc scenarios run RunLoopKit's main loop on it (sendRequest), which a
// top-level await would make impossible (README, "Threading in Swift 6").
import Glibc

exit(BenchMain.run())
