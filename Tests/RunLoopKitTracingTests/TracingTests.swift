// Trace context through ports (issue 44, must 3): a message sent inside a
// span is handled in that trace, on another thread, in another process
// (ipc, tcp) and in a distributed actor's method. Each test runs in a child
// process (an exit test): a tracer is bootstrapped once per process.
import Dispatch
import Distributed
import FoundationEssentials
import Glibc
import Synchronization
import InMemoryTracing
import NetworkPeerSupport
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitDistributed
import RunLoopKitTracing
import Testing
import Tracing
import TracingTestSupport

/// A distributed actor whose method says which trace it ran in.
distributed actor TracedDesk {
    typealias ActorSystem = PortActorSystem

    init(worker: LoopThread, actorSystem: PortActorSystem) {
        self.actorSystem = actorSystem
        actorSystem.pin(id, to: worker)
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { actorSystem.executor(for: id) }

    /// The trace id and parent span of the span the method runs in.
    distributed func currentTrace() -> [String] {
        guard let span = ServiceContext.current?.inMemorySpanContext else { return [] }
        return [span.traceID, span.parentSpanID ?? "-"]
    }
}

@Suite("Trace context through ports (RunLoopKitTracing)", .blocksThreads)
struct TracingTests {
    /// The spans `tracer` finished, gathered until `done` holds of them
    /// (60 s at most, a safety net): a span ends after the work it measures.
    static func finishedSpans(of tracer: W3CTestTracer, until done: ([FinishedInMemorySpan]) -> Bool) -> [FinishedInMemorySpan] {
        var spans: [FinishedInMemorySpan] = []
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            spans += tracer.finishedSpans()
            if done(spans) || ContinuousClock.now > deadline { return spans }
            usleep(1_000)
        }
    }

    @Test("a message sent inside a span is handled in that trace on another thread, inside a consumer span 'process <name>' whose parent is the sending span; without a current span, or after stop(), nothing is carried")
    func acrossThreads() async {
        await #expect(processExitsWith: .success) {
            let tracer = W3CTestTracer()
            InstrumentationSystem.bootstrap(tracer)
            RunLoopKitTracing.start()
            let thread = LoopThread(name: "handler")
            try thread.start()
            defer { thread.stop() }
            let port = try Port(transport: .ipc)
            defer { port.invalidate() }
            try PortNameServer.register(port, name: "desk-\(getpid())")
            defer { PortNameServer.unregister("desk-\(getpid())") }
            let seen = Mutex<[(InMemorySpanContext?, PortTraceContext?)]>([])
            let arrived = DispatchSemaphore(value: 0)
            port.setMessageHandler { message in
                seen.withLock { $0.append((ServiceContext.current?.inMemorySpanContext, message.traceContext)) }
                arrived.signal()
            }
            try port.schedule(on: thread)

            let sent = tracer.withSpan("request") { span in
                _ = try? port.send(msgid: 7, components: [.data(Data("a".utf8))], before: Date() + 10)
                return span.context.inMemorySpanContext!
            }
            #expect(arrived.wait(timeout: .now() + 60) == .success)
            let (inside, carried) = try #require(seen.withLock { $0.last })
            #expect(inside?.traceID == sent.traceID && inside?.parentSpanID == sent.spanID, "\(String(describing: inside)) \(sent)")
            #expect(carried?.traceID == sent.traceID && carried.map { String($0.parentID, radix: 16) } == String(UInt64(sent.spanID, radix: 16)!, radix: 16))
            // The consumer span ends once the handler has returned: after the signal.
            let spans = Self.finishedSpans(of: tracer) { $0.contains { $0.operationName == "process desk-\(getpid())" } }
            let consumer = try #require(spans.first { $0.operationName == "process desk-\(getpid())" }, "\(spans.map(\.operationName))")
            #expect(consumer.kind == .consumer && consumer.traceID == sent.traceID && consumer.parentSpanID == sent.spanID)
            #expect(consumer.attributes["messaging.system"]?.toSpanAttribute() == .string("runloopkit"))

            // No span current: nothing carried, the handler sees no context.
            try port.send(msgid: 8, before: Date() + 10)
            #expect(arrived.wait(timeout: .now() + 60) == .success)
            #expect(seen.withLock { $0.last.map { $0.0 == nil && $0.1 == nil } } == true)

            // Stopped: a send inside a span carries nothing.
            RunLoopKitTracing.stop()
            tracer.withSpan("after stop") { _ in _ = try? port.send(msgid: 9, before: Date() + 10) }
            #expect(arrived.wait(timeout: .now() + 60) == .success)
            #expect(seen.withLock { $0.last.map { $0.0 == nil && $0.1 == nil } } == true)
        }
    }

    @Test("a message sent inside a span to a port of another process, over ipc and over tcp, is handled there in the same trace, as the child of the sending span", arguments: ["ipc", "tcp"])
    func acrossProcesses(transport: String) async {
        await #expect(processExitsWith: .success) { [transport = transport as String] in
            // The peer's runtime directory, so that an ipc port of the
            // peer is one of this host's (its id lives there).
            setenv("RUNLOOPKIT_RUNTIME_DIR", NetworkKeysFixture.shared.environment(child: 0)["RUNLOOPKIT_RUNTIME_DIR"]!, 1)
            let tracer = W3CTestTracer()
            InstrumentationSystem.bootstrap(tracer)
            RunLoopKitTracing.start()
            let peer = try NetworkPeerProcess.start(["serve", transport], child: 0, program: "rlk-trace-peer")
            defer { peer.stop() }
            let right = try Port.fromDescriptor(NetworkPeerProcess.bytes(fromHex: #require(peer.waitForLine(starting: "PORT "))))
            let sent = try tracer.withSpan("request") { span in
                _ = try right.sendRequest(msgid: 1, components: [.data(Data("hello".utf8))], sendTimeout: 30, receiveTimeout: 60)
                return span.context.inMemorySpanContext!
            }
            let line = try #require(peer.waitForLine(starting: "IN "), "\(peer.program.output) \(peer.program.errorOutput)")
            let fields = line.split(separator: " ").map(String.init)
            #expect(fields.count == 4 && fields[0] == sent.traceID && fields[2] == sent.spanID && fields[3] == "process", "\(line) vs \(sent)")
        }
    }

    @Test("a distributed actor's method called over ports runs in the caller's trace")
    func actorCall() async {
        await #expect(processExitsWith: .success) {
            let tracer = W3CTestTracer()
            InstrumentationSystem.bootstrap(tracer)
            RunLoopKitTracing.start()
            let home = try PortActorSystem(transport: .inproc, name: "traced-home-\(getpid())")
            let away = try PortActorSystem(transport: .inproc, name: "traced-away-\(getpid())")
            let worker = LoopThread(name: "desk")
            try worker.start()
            defer {
                away.shutdown()
                home.shutdown()
                worker.stop()
            }
            let desk = TracedDesk(worker: worker, actorSystem: home)
            let remote = try TracedDesk.resolve(id: desk.id, using: away)
            let span = tracer.spans.startSpan("call", context: .topLevel)
            let sent = span.context.inMemorySpanContext!
            let inside = try await ServiceContext.$current.withValue(span.context) { try await remote.currentTrace() }
            span.end()
            #expect(inside.first == sent.traceID, "\(inside) vs \(sent)")
            // The method's context is the consumer span's, a child of the caller's.
            #expect(inside.count == 2 && inside[1] != "-")
            // The call's consumer span ends once its handler has returned, which may be after the reply came.
            let spans = Self.finishedSpans(of: tracer) { $0.contains { $0.kind == .consumer && $0.traceID == sent.traceID } }
            #expect(spans.contains { $0.kind == .consumer && $0.traceID == sent.traceID && $0.parentSpanID == sent.spanID })
        }
    }
}
