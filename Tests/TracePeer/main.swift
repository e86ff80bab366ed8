// rlk-trace-peer: a traced RunLoopKit process at the far end of the
// tracing tests' ipc and tcp hops. Its tracer is the tests' (W3C ids and
// traceparent propagation, spans in memory), bootstrapped before
// RunLoopKitTracing starts.
//
//   rlk-trace-peer serve ipc|tcp
//       A port (ipc, or tcp on 127.0.0.1 with CURVE) on a LoopThread.
//       Prints "PORT <descriptor in hex>", then serves until SIGTERM (at
//       most two minutes): each message's handler prints "IN <trace id>
//       <span id> <parent span id> <span name>", the span it runs in (or
//       "IN none" outside any), and answers its reply port with the same
//       data (msgid 2), from inside that span.
import Glibc
import InMemoryTracing
import NetworkPeerSupport
import RunLoopKit
import RunLoopKitTracing
import TracingTestSupport
import Tracing

func serve(_ transport: String) throws {
    blockTermination()
    let tracer = W3CTestTracer()
    InstrumentationSystem.bootstrap(tracer)
    RunLoopKitTracing.start()
    let thread = LoopThread(name: "traced")
    try thread.start()
    let port = transport == "tcp"
        ? try Port(transport: .tcp(.listening(on: "127.0.0.1", port: 0)))
        : try Port(transport: .ipc)
    port.setMessageHandler { message in
        if let context = ServiceContext.current?.inMemorySpanContext {
            let name = tracer.spans.activeSpan(identifiedBy: ServiceContext.current!)?.operationName ?? "?"
            say("IN \(context.traceID) \(context.spanID) \(context.parentSpanID ?? "-") \(name)")
        } else {
            say("IN none")
        }
        try? message.replyPort?.send(msgid: 2, components: message.components, before: Date() + 10)
    }
    try port.schedule(on: thread)
    say("PORT \(hex(port.descriptor))")
    awaitTermination()
    port.invalidate()
    thread.stop()
}

do {
    let arguments = CommandLine.arguments
    guard arguments.count == 3, arguments[1] == "serve", ["ipc", "tcp"].contains(arguments[2]) else {
        say("usage: rlk-trace-peer serve ipc|tcp")
        exit(2)
    }
    try serve(arguments[2])
} catch {
    say("ERROR \(error)")
    exit(1)
}
