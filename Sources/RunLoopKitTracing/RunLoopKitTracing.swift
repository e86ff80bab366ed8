import Instrumentation
@_spi(RunLoopKitInternals) import RunLoopKitPorts

/// Trace context through ports, for swift-distributed-tracing: once
/// started, a message sent while a span is current carries that span's W3C
/// trace context (docs/tracing.md), and its handler, on another thread or
/// in another process, runs inside a consumer span that continues the
/// trace, with that span's context as its `ServiceContext`. A distributed
/// actor call over ports is such a message: the callee's method runs in
/// the caller's trace.
///
/// The context travels as W3C's `traceparent` and `tracestate` (the
/// propagation OpenTelemetry and swift-otel use): the bootstrapped
/// instrument injects them on the sending side and extracts them on the
/// receiving one, so any tracer whose propagator speaks W3C works. Keys
/// of other propagation formats are not carried.
///
/// Without `start()`, a send reads no task-local value and a message
/// carries nothing more than before.
public enum RunLoopKitTracing {
    /// Starts carrying trace context: from now on, in this process, sends
    /// carry the current span's context, and deliveries of messages that
    /// carry one run in it. Bootstrap the tracer first
    /// (`InstrumentationSystem.bootstrap`). Idempotent.
    ///
    /// Thread rules: any thread.
    public static func start() {
        PortTracing.attach(TracingBridge())
    }

    /// Stops: sends carry nothing from now on, and deliveries run outside
    /// the contexts their messages carry (`PortMessage.traceContext`
    /// still says them). Idempotent.
    ///
    /// Thread rules: any thread.
    public static func stop() {
        PortTracing.detach()
    }

    /// Whether ``start()`` was called and ``stop()`` not since.
    public static var isStarted: Bool { PortTracing.active.load(ordering: .relaxed) }
}
