import Dispatch
import Glibc
import RunLoopKit

/// S-RUN-1's exception: the main loop's common modes stand for the main
/// queue, so they are never empty there.
extension MainLoopCheck {
    /// With nothing in it, the default mode waits for its deadline (or a
    /// main-queue block) instead of finishing; `limitDate` answers
    /// distantFuture. A mode outside the common modes is still empty.
    static let emptyCommonModeWaits = MainLoopCheck(name: "empty-common-mode-waits") {
        guard RunLoop.main.limitDate(forMode: .default) == .distantFuture else {
            return "limitDate(forMode: .default) is \(String(describing: RunLoop.main.limitDate(forMode: .default))), not distantFuture"
        }
        var start = ContinuousClock.now
        let started = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.3))
        var elapsed = seconds(since: start)
        guard started else { return "run(mode: .default, before:) finished at once, as for an empty mode" }
        guard elapsed >= 0.3 else { return "run(mode: .default, before: +0.3 s) returned after \(elapsed) s" }
        start = ContinuousClock.now
        RunLoop.main.run(until: Date(timeIntervalSinceNow: 0.3))
        elapsed = seconds(since: start)
        guard elapsed >= 0.3 else { return "run(until: +0.3 s) returned after \(elapsed) s" }
        let outside = RunLoop.Mode("empty-outside")
        if RunLoop.main.limitDate(forMode: outside) != nil { return "limitDate of an empty mode outside the common modes is not nil" }
        start = ContinuousClock.now
        if RunLoop.main.run(mode: outside, before: Date(timeIntervalSinceNow: 5)) {
            return "an empty mode outside the common modes ran"
        }
        elapsed = seconds(since: start)
        return elapsed < 1 ? nil : "an empty mode outside the common modes took \(elapsed) s to finish"
    }

    /// `run()` on the main loop does not return for want of sources: a
    /// main-queue block queued 0.3 s later ends the program from inside it.
    static let runDoesNotFinish = MainLoopCheck(name: "run-does-not-finish") {
        let start = ContinuousClock.now
        DispatchQueue.main.asyncAfter(deadline: .now() + 0.3) {
            let elapsed = seconds(since: start)
            print(elapsed >= 0.3 ? "PASS run-does-not-finish" : "FAIL run-does-not-finish: the block ran after \(elapsed) s")
            finish()
        }
        RunLoop.main.run()
        return "run() returned, as if the main loop's default mode were empty"
    }
}
