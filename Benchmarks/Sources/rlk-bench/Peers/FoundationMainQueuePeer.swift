// Foundation's RunLoop.main draining the main queue, for the main-queue
// scenario. Imports Foundation and not RunLoopKit; see FoundationThread.swift.
import Foundation

/// One run of Foundation's main loop in its default mode, until a source
/// (a drain of the main queue) was handled or `deadline`. Main thread only.
func runFoundationMainLoop(before deadline: Date) {
    _ = Foundation::RunLoop.main.run(mode: .default, before: deadline)
}
