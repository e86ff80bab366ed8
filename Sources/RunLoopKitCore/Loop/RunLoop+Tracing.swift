import Synchronization

/// The process's tracer: one monitor that hears of every pass and callout
/// of every loop in the process, beside each loop's own `monitor` (the
/// sniffer's timeline uses it: `PortTap.traceLoops()`).
extension RunLoop {
    /// A monitor of every loop in the process, told after each loop's own
    /// `monitor` of the same pass or callout. Nil (the default) costs a loop
    /// one atomic load and a branch a pass. A loop reads it at the start of
    /// each pass, so setting it reaches a sleeping loop at its next pass.
    /// Its methods run on the loops' threads, many at once: it must be
    /// quick and thread-safe.
    public static var tracer: (any RunLoopMonitor)? {
        get { tracerStorage.withLock { $0 } }
        set {
            tracerStorage.withLock { $0 = newValue }
            tracing.store(newValue != nil, ordering: .releasing)
        }
    }

    /// Whether a tracer is set: what each pass reads.
    static let tracing = Atomic<Bool>(false)
    private static let tracerStorage = Locked<(any RunLoopMonitor)?>(nil)

    /// The tracer, read under its lock (only while `tracing` is true).
    static var currentTracer: (any RunLoopMonitor)? { tracerStorage.withLock { $0 } }
}
