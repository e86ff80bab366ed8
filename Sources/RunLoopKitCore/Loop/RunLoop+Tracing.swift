import Synchronization

/// The process's tracer: one monitor that hears of every pass and callout
/// of every loop in the process, beside each loop's own `monitor` (the
/// sniffer's timeline uses it: `PortTap.traceLoops()`). Beside it, the
/// process's instruments (`RunLoop.instruments`, what a metrics bridge
/// counts), which neither the tracer nor a loop's monitor gives up.
extension RunLoop {
    /// A monitor of every loop in the process, told after each loop's own
    /// `monitor` of the same pass or callout. Nil (the default) costs a loop
    /// one atomic load and a branch a pass. A loop reads it at the start of
    /// each pass, so setting it reaches a sleeping loop at its next pass.
    /// Its methods run on the loops' threads, many at once: it must be
    /// quick and thread-safe.
    public static var tracer: (any RunLoopMonitor)? {
        get { processMonitors.withLock { $0.tracer } }
        set { processMonitors.withLock { $0.tracer = newValue; publish(&$0) } }
    }

    /// A monitor of every loop for a metrics bridge (RunLoopKitMetrics):
    /// told after the tracer, read with it, so that a pass costs the same
    /// one load and branch while neither is set.
    package static var instruments: (any RunLoopMonitor)? {
        get { processMonitors.withLock { $0.instruments } }
        set { processMonitors.withLock { $0.instruments = newValue; publish(&$0) } }
    }

    /// Whether a tracer or instruments are set: what each pass reads.
    static let tracing = Atomic<Bool>(false)

    /// The process-wide monitors, and the one a pass calls: either alone,
    /// or both in turn.
    private struct ProcessMonitors {
        var tracer: (any RunLoopMonitor)?
        var instruments: (any RunLoopMonitor)?
        var told: (any RunLoopMonitor)?
    }

    private static let processMonitors = Locked(ProcessMonitors())

    private static func publish(_ monitors: inout ProcessMonitors) {
        switch (monitors.tracer, monitors.instruments) {
        case let (tracer?, instruments?): monitors.told = MonitorPair(first: tracer, second: instruments)
        case let (tracer, instruments): monitors.told = tracer ?? instruments
        }
        tracing.store(monitors.told != nil, ordering: .releasing)
    }

    /// What a pass tells of itself and its callouts (only while `tracing` is true).
    static var currentTracer: (any RunLoopMonitor)? { processMonitors.withLock { $0.told } }

    /// The tracer, then the instruments.
    private final class MonitorPair: RunLoopMonitor {
        let first: any RunLoopMonitor
        let second: any RunLoopMonitor

        init(first: any RunLoopMonitor, second: any RunLoopMonitor) {
            self.first = first
            self.second = second
        }

        func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) {
            first.runLoop(loop, didFinish: callout)
            second.runLoop(loop, didFinish: callout)
        }

        func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) {
            first.runLoop(loop, didFinish: pass)
            second.runLoop(loop, didFinish: pass)
        }
    }
}
