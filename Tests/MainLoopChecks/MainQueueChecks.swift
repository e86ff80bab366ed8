import Dispatch
import Glibc
import RunLoopKit

/// S-EXEC-3: the main queue's blocks and @MainActor jobs run on the main
/// thread while RunLoop.main runs a common mode, one drain a pass.
extension MainLoopCheck {
    /// A block queued on DispatchQueue.main from another thread runs during
    /// `run(mode: .default, before:)`, which returns true when it ran.
    static let blockFromAnotherThread = MainLoopCheck(name: "block-from-another-thread") {
        let ranOnMainLoop = Box<Bool?>(nil)
        DispatchQueue.global().async {
            DispatchQueue.main.async { ranOnMainLoop.set(onMainLoop) }
        }
        let start = ContinuousClock.now
        let started = RunLoop.main.run(mode: .default, before: Date(timeIntervalSinceNow: 10))
        let elapsed = seconds(since: start)
        guard started else { return "run(mode: .default, before:) returned false" }
        guard let onMain = ranOnMainLoop.current else { return "the run returned after \(elapsed) s without running the block" }
        guard onMain else { return "the block ran off the main thread" }
        return elapsed < 5 ? nil : "the run returned only after \(elapsed) s"
    }

    /// `Task { @MainActor in … }` runs while RunLoop.main runs.
    static let mainActorTask = MainLoopCheck(name: "main-actor-task") {
        let ranOnMainLoop = Box<Bool?>(nil)
        Task { @MainActor in ranOnMainLoop.set(onMainLoop) }
        runMain { ranOnMainLoop.current != nil }
        guard let onMain = ranOnMainLoop.current else { return "the MainActor task did not run within 10 s" }
        return onMain ? nil : "the MainActor task ran off the main thread"
    }

    /// A drain is the pass's handled source: a run that returns after one
    /// source returns `.handledSource` after it.
    static let drainIsAHandledSource = MainLoopCheck(name: "drain-is-a-handled-source") {
        let ran = Box(false)
        DispatchQueue.main.async { ran.set(true) }
        let result = RunLoop.main.run(mode: .default, seconds: 10, returnAfterSourceHandled: true)
        guard ran.current else { return "the block did not run (run returned \(result))" }
        return result == .handledSource ? nil : "the run returned \(result), not handledSource"
    }

    /// A mode outside the common modes does not drain the main queue; the
    /// default mode then does.
    static let modeOutsideCommonModesDoesNotDrain = MainLoopCheck(name: "mode-outside-common-modes-does-not-drain") {
        let outside = RunLoop.Mode("outside")
        let ran = Box(false)
        DispatchQueue.main.async { ran.set(true) }
        let passes = Box(0)
        guard let timer = try? Timer(timeInterval: 0.01, repeats: true, block: { _ in passes.update { $0 += 1 } }) else {
            return "could not make a timer"
        }
        RunLoop.main.add(timer, forMode: outside)
        defer { timer.invalidate() }
        RunLoop.main.run(mode: outside, seconds: 0.3)
        if ran.current { return "a run of a mode outside the common modes ran a main-queue block" }
        if passes.current == 0 { return "the mode's timer never fired, so the mode did not run" }
        runMain { ran.current }
        return ran.current ? nil : "the block did not run in the default mode afterwards"
    }

    /// A mode marked common later drains the main queue as well, with
    /// nothing else in it.
    static let addedCommonModeDrains = MainLoopCheck(name: "added-common-mode-drains") {
        let tracking = RunLoop.Mode("tracking")
        RunLoop.main.addCommonMode(tracking)
        let ran = Box(false)
        DispatchQueue.main.async { ran.set(true) }
        let started = RunLoop.main.run(mode: tracking, before: Date(timeIntervalSinceNow: 10))
        guard started else { return "the empty common mode 'tracking' did not run" }
        return ran.current ? nil : "a run of 'tracking' returned without running the block"
    }

    /// A monitor of the main loop sees each drain as a callout of kind
    /// `.mainQueue`, the blocks it ran inside it.
    static let monitorSeesDrains = MainLoopCheck(name: "monitor-sees-drains") {
        final class Kinds: RunLoopMonitor {
            let seen = Box<[RunLoop.CalloutKind]>([])
            func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) { seen.update { $0.append(callout.kind) } }
        }
        let kinds = Kinds()
        RunLoop.main.monitor = kinds
        defer { RunLoop.main.monitor = nil }
        let ran = Box(false)
        DispatchQueue.main.async { ran.set(true) }
        runMain { ran.current }
        guard ran.current else { return "the block did not run" }
        return kinds.seen.current.contains(.mainQueue) ? nil : "the monitor saw \(kinds.seen.current), no .mainQueue callout"
    }
}
