// Recipe 2 of README.md, "Using RunLoopKit beside Foundation": one file like
// this per client module. A declaration at module scope wins over imported
// ones, so in every file of this module, including files that import
// Foundation too, `RunLoop` and `Timer` mean RunLoopKit's. Foundation's stay
// reachable as `Foundation.RunLoop` and `Foundation.Timer`.
//
// RunLoop and Timer are the only RunLoopKit names that Foundation also has
// today; the other public types (CustomSource, SocketSource, RunLoopObserver,
// RunLoopMonitor, LoopThread, RunLoopError, RunLoopError) need no alias.
import RunLoopKit

typealias RunLoop = RunLoopKit.RunLoop
typealias Timer = RunLoopKit.Timer
