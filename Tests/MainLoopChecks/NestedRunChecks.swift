import Dispatch
import Glibc
import RunLoopKit

/// A run nested in a main-queue block or a @MainActor job does not drain
/// the main queue again, does not count it as a source, and does not spin
/// on its eventfd (S-EXEC-3, S-EXEC-1).
extension MainLoopCheck {
    static let nestedRunInBlockDoesNotDrain = MainLoopCheck(name: "nested-run-in-block-does-not-drain") {
        let outcome = Box<NestedRunOutcome?>(nil)
        DispatchQueue.main.async { outcome.set(runNested()) }
        return verify(outcome)
    }

    static let nestedRunInMainActorJobDoesNotDrain = MainLoopCheck(name: "nested-run-in-main-actor-job-does-not-drain") {
        let outcome = Box<NestedRunOutcome?>(nil)
        Task { @MainActor in outcome.set(runNested()) }
        return verify(outcome)
    }

    /// What the runs nested in a drain found, and the block they queued.
    struct NestedRunOutcome: Sendable {
        let finding: String?
        let queuedBlockRan: Box<Bool>
    }

    /// In a drain: queues a block, then runs the default mode nested, first
    /// empty, then with a timer in it.
    private static func runNested() -> NestedRunOutcome {
        let queuedBlockRan = Box(false)
        DispatchQueue.main.async { queuedBlockRan.set(true) }
        func outcome(_ finding: String?) -> NestedRunOutcome { NestedRunOutcome(finding: finding, queuedBlockRan: queuedBlockRan) }

        // Inside a drain the default mode no longer stands for the main
        // queue: with nothing else in it, it is empty.
        var start = ContinuousClock.now
        if RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 2)) {
            return outcome("a nested run of the default mode with nothing in it ran instead of finishing")
        }
        if seconds(since: start) >= 1 { return outcome("the empty nested run took \(seconds(since: start)) s") }

        // With a timer in it, the nested run lasts to its deadline: the
        // queued block's eventfd neither ends it (as a handled source)
        // nor makes it spin.
        let passes = Box(0)
        let observer = RunLoopObserver(activities: .beforeWaiting) { _, _ in passes.update { $0 += 1 } }
        guard let timer = try? Timer(timeInterval: 0.01, repeats: true, block: { _ in }) else {
            return outcome("could not make a timer")
        }
        RunLoop.main.add(timer, forMode: .default)
        RunLoop.main.add(observer, forMode: .default)
        defer {
            timer.invalidate()
            observer.invalidate()
        }
        start = ContinuousClock.now
        let started = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 0.2))
        let elapsed = seconds(since: start)
        if !started { return outcome("the nested run with a timer did not run") }
        if queuedBlockRan.current { return outcome("a nested run drained the main queue again") }
        if elapsed < 0.2 { return outcome("the nested run returned after \(elapsed) s, as if it had handled a source") }
        if passes.current > 100 { return outcome("the nested run spun: \(passes.current) passes in 0.2 s") }
        return outcome(nil)
    }

    /// Runs the main loop until the nested runs reported, then until the
    /// block they queued ran: the outer run drains it.
    private static func verify(_ outcome: Box<NestedRunOutcome?>) -> String? {
        runMain { outcome.current != nil }
        guard let result = outcome.current else { return "the block or job with the nested runs did not run" }
        if let finding = result.finding { return finding }
        runMain { result.queuedBlockRan.current }
        return result.queuedBlockRan.current ? nil : "the block queued in the drain never ran afterwards"
    }
}
