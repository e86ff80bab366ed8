// main-loop-checks: RunLoop.main serving DispatchQueue.main (S-EXEC-3) and
// the main loop's common modes that never empty (S-RUN-1), checked where
// they hold: on the main thread of a program whose main is synchronous. The
// test runner parks its main thread in dispatch_main(), so MainLoopTests
// starts this program and reads what it prints: a line `PASS <check>` or
// `FAIL <check>: <why>` for each check, then `DONE`. Exits 0 if every check
// passed, 1 otherwise.
import Glibc
import RunLoopKit

for check in MainLoopCheck.all where check.name != MainLoopCheck.runDoesNotFinish.name {
    MainLoopCheck.report(check)
}
// Last, since it ends the program: run() on the main loop does not return
// for want of sources (S-RUN-1); a main-queue block ends it.
MainLoopCheck.report(.runDoesNotFinish)
MainLoopCheck.finish()
