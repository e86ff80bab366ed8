@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Puts every loop's passes, sleeps and callouts into the tap's ring, as
/// events of their own (`pass`, `sleep`, `callout`), so that a timeline
/// shows what each loop thread did between the messages it sent and
/// received (docs/tap-format.md, "Loop records"). Installed as the
/// process's `RunLoop.tracer` by `PortTap.traceLoops()` or
/// `RUNLOOPKIT_TAP_LOOPS=1`; a loop's own `monitor` is told first, as
/// before. The tap's own loop is left out: each of its passes would make
/// events, whose passing on would make more.
final class TapLoopTracer: RunLoopMonitor {
    static let shared = TapLoopTracer()

    func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) {
        guard PortTap.active.load(ordering: .relaxed), !TapPipeline.shared.isTapLoop(loop) else { return }
        let mode = TapNames.shared.reasonID(pass.mode.rawValue)
        TapPipeline.shared.recordLoop(
            kind: .pass, start: pass.startNanoseconds, duration: pass.durationNanoseconds, mode: mode,
            number: pass.passNumber, label: 0, detail: UInt32(clamping: pass.firedTimers), handledSource: pass.handledSource)
        if pass.sleptNanoseconds > 0 {
            TapPipeline.shared.recordLoop(
                kind: .sleep, start: pass.sleepStartNanoseconds, duration: pass.sleptNanoseconds, mode: mode,
                number: pass.passNumber, label: 0, detail: 0, handledSource: false)
        }
    }

    func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) {
        guard PortTap.active.load(ordering: .relaxed), !TapPipeline.shared.isTapLoop(loop) else { return }
        let names = TapNames.shared
        let origin = callout.origin.map { names.reasonID($0.description) } ?? 0
        TapPipeline.shared.recordLoop(
            kind: .callout, start: callout.startNanoseconds, duration: callout.durationNanoseconds,
            mode: names.reasonID(callout.mode.rawValue), number: 0, label: names.reasonID(callout.kind.description),
            detail: UInt32(origin), handledSource: false)
    }
}
