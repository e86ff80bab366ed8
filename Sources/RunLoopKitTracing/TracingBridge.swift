import Instrumentation
@_spi(RunLoopKitInternals) import RunLoopKitPorts
import Tracing

/// The ports' side of tracing (`PortTraceBridge`), in
/// swift-distributed-tracing's terms: W3C headers in and out of the
/// bootstrapped instrument, and a consumer span around each delivery.
struct TracingBridge: PortTraceBridge {
    func outgoingContext(to port: Port, msgid: UInt32) -> PortTraceContext? {
        guard let context = ServiceContext.current else { return nil }
        var headers = TraceHeaders()
        InstrumentationSystem.instrument.inject(context, into: &headers, using: TraceHeaders.Writer())
        guard let traceparent = headers.traceparent else { return nil }
        // A trace state past W3C's 512 bytes is left behind, not the trace.
        let state = headers.tracestate.flatMap { $0.utf8.count <= PortTraceContext.maxTraceStateBytes ? $0 : nil }
        return PortTraceContext(traceparent: traceparent, tracestate: state)
    }

    func deliver(in trace: PortTraceContext, on port: Port, msgid: UInt32, _ deliver: () -> Void) {
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(TraceHeaders(trace), into: &context, using: TraceHeaders.Reader())
        // OpenTelemetry's messaging conventions: "process <destination>",
        // a consumer span; a port without a name (a reply port) is "process".
        let name = port.knownName
        InstrumentationSystem.tracer.withSpan(name.map { "process \($0)" } ?? "process", context: context, ofKind: .consumer) { span in
            span.attributes["messaging.system"] = "runloopkit"
            span.attributes["messaging.operation.type"] = "process"
            if let name { span.attributes["messaging.destination.name"] = name }
            span.attributes["messaging.message.id"] = String(msgid)
            deliver()
        }
    }
}
