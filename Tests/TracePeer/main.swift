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
//
//   rlk-trace-peer request
//       For portsniff's tests: inside a span, sends msgid 7 to a port of
//       its own on a LoopThread, whose handler answers with msgid 2 from
//       the consumer span; then msgid 8 and its answer outside any span.
//       Prints "TRACE <trace id>" (the span's) once both answers came,
//       and exits.
import Dispatch
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

struct NoAnswer: Error {}

func request() throws {
    let tracer = W3CTestTracer()
    InstrumentationSystem.bootstrap(tracer)
    RunLoopKitTracing.start()
    let thread = LoopThread(name: "traced")
    try thread.start()
    let service = try Port(transport: .inproc)
    let replies = try Port(transport: .inproc)
    let answered = DispatchSemaphore(value: 0)
    service.setMessageHandler { message in
        try? message.replyPort?.send(msgid: 2, components: message.components, before: Date() + 10)
    }
    replies.setMessageHandler { _ in answered.signal() }
    try service.schedule(on: thread)
    try replies.schedule(on: thread)
    let traceID = try tracer.withSpan("request") { span in
        try service.send(msgid: 7, components: [.data(Data("traced".utf8))], replyPort: replies, before: Date() + 10)
        return span.context.inMemorySpanContext!.traceID
    }
    guard answered.wait(timeout: .now() + 60) == .success else { throw NoAnswer() }
    try service.send(msgid: 8, components: [.data(Data("plain".utf8))], replyPort: replies, before: Date() + 10)
    guard answered.wait(timeout: .now() + 60) == .success else { throw NoAnswer() }
    say("TRACE \(traceID)")
    service.invalidate()
    replies.invalidate()
    thread.stop()
}

do {
    let arguments = CommandLine.arguments
    if arguments.count == 2, arguments[1] == "request" {
        try request()
        exit(0)
    }
    guard arguments.count == 3, arguments[1] == "serve", ["ipc", "tcp"].contains(arguments[2]) else {
        say("usage: rlk-trace-peer serve ipc|tcp | rlk-trace-peer request")
        exit(2)
    }
    try serve(arguments[2])
} catch {
    say("ERROR \(error)")
    exit(1)
}
