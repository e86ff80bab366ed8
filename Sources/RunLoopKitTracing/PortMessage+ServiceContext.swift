import Instrumentation
import RunLoopKitPorts

/// A received message's trace context as swift-distributed-tracing's
/// `ServiceContext`.
extension PortMessage {
    /// The `ServiceContext` the message was sent in, extracted by the
    /// bootstrapped instrument from its `PortMessage.traceContext`: for a
    /// message taken from a stream (`for await message in port.messages`),
    /// whose consumer is not run in it. Nil when it carried none.
    ///
    /// ```swift
    /// for await message in port.messages {
    ///     try await ServiceContext.$current.withValue(message.serviceContext) { … }
    /// }
    /// ```
    public var serviceContext: ServiceContext? {
        guard let trace = traceContext else { return nil }
        var context = ServiceContext.topLevel
        InstrumentationSystem.instrument.extract(TraceHeaders(trace), into: &context, using: TraceHeaders.Reader())
        return context
    }
}
