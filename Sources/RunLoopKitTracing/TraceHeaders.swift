import Instrumentation
import RunLoopKitPorts

/// W3C's two headers, as the instrument injects and extracts them: the
/// carrier between a `ServiceContext` and a message's `PortTraceContext`.
struct TraceHeaders: Sendable {
    var traceparent: String?
    var tracestate: String?

    init() {}

    init(_ trace: PortTraceContext) {
        traceparent = trace.traceparent
        tracestate = trace.traceState
    }

    struct Writer: Injector {
        func inject(_ value: String, forKey key: String, into carrier: inout TraceHeaders) {
            switch key.lowercased() {
            case "traceparent": carrier.traceparent = value
            case "tracestate": carrier.tracestate = value
            default: break  // other propagation formats are not carried
            }
        }
    }

    struct Reader: Extractor {
        func extract(key: String, from carrier: TraceHeaders) -> String? {
            switch key.lowercased() {
            case "traceparent": carrier.traceparent
            case "tracestate": carrier.tracestate
            default: nil
            }
        }
    }
}
