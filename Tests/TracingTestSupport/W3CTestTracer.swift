// The tests' tracer: swift-distributed-tracing's InMemoryTracer (spans
// kept in memory, read back by the test), with W3C's ids and its
// traceparent propagation, as OpenTelemetry's tracers propagate: what
// RunLoopKitTracing carries is what such a tracer injects.
import InMemoryTracing
import Synchronization
import Tracing

package struct W3CTestTracer: Tracer {
    package let spans: InMemoryTracer

    package init() {
        // Random ids of W3C's sizes: 32 and 16 lowercase hex digits.
        spans = InMemoryTracer(idGenerator: .init(
            nextTraceID: { Self.hexID(UInt64.random(in: 1...UInt64.max)) + Self.hexID(UInt64.random(in: 1...UInt64.max)) },
            nextSpanID: { Self.hexID(UInt64.random(in: 1...UInt64.max)) }))
    }

    package func startSpan<Instant: TracerInstant>(
        _ operationName: String, context: @autoclosure () -> ServiceContext, ofKind kind: SpanKind,
        at instant: @autoclosure () -> Instant, function: String, file fileID: String, line: UInt
    ) -> InMemorySpan {
        spans.startSpan(operationName, context: context(), ofKind: kind, at: instant(), function: function, file: fileID, line: line)
    }

    package func forceFlush() { spans.forceFlush() }

    package func inject<Carrier, Inject: Injector>(_ context: ServiceContext, into carrier: inout Carrier, using injector: Inject)
    where Inject.Carrier == Carrier {
        guard let span = context.inMemorySpanContext else { return }
        injector.inject("00-\(span.traceID)-\(span.spanID)-01", forKey: "traceparent", into: &carrier)
    }

    package func extract<Carrier, Extract: Extractor>(_ carrier: Carrier, into context: inout ServiceContext, using extractor: Extract)
    where Extract.Carrier == Carrier {
        guard let header = extractor.extract(key: "traceparent", from: carrier) else { return }
        let parts = header.split(separator: "-")
        guard parts.count == 4 else { return }
        context.inMemorySpanContext = InMemorySpanContext(traceID: String(parts[1]), spanID: String(parts[2]), parentSpanID: nil)
    }

    /// The spans ended so far, oldest first (taken: a second call sees only newer ones).
    package func finishedSpans() -> [FinishedInMemorySpan] { spans.popFinishedSpans() }

    private static func hexID(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
