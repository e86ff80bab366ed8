import Dispatch
import Glibc
import MetricsTestKit
import Synchronization
import RunLoopKit
import RunLoopKitMetrics
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

/// RunLoopKitMetrics against swift-metrics' test backend. Each test runs in
/// a child process (an exit test): the metrics are the process's, and the
/// other suites' ports would report to them too.
@Suite("Metrics", .blocksThreads)
struct MetricsTests {
    @Test("Metrics: a port's messages sent, delivered, dropped by reason and failed by reason, labelled by its name; reply ports and other unnamed ports share one series; nothing is counted after stop()")
    func portFigures() async {
        await #expect(processExitsWith: .success) {
            let metrics = TestMetrics()
            RunLoopKitMetrics.start(factory: metrics)
            let worker = LoopThread(name: "metrics-ports")
            try worker.start()
            defer { worker.stop() }

            let name = "metrics-orders-\(getpid())"
            let delivered = DispatchSemaphore(value: 0)
            let orders = try Port(transport: .ipc)
            try PortNameServer.register(orders, name: name)
            defer { PortNameServer.unregister(name) }
            orders.setMessageHandler { message in
                if let reply = message.replyPort {
                    try? reply.send(msgid: message.msgid, before: Date() + 30)
                } else {
                    delivered.signal()
                }
            }
            try orders.schedule(on: worker)
            let right = try PortNameServer.lookup(name)
            for _ in 0..<50 { try right.send(msgid: 1, before: Date() + 30) }
            for _ in 0..<50 { #expect(delivered.wait(timeout: .now() + 60) == .success) }
            _ = try right.sendRequest(msgid: 2, sendTimeout: 30, receiveTimeout: 60)
            // A callout's deliveries are counted when it ends, after its
            // handlers: a block queued now runs after that.
            try worker.performAndWait {}

            // The request and its reply: 51 sent to and delivered on the
            // named port; the reply sent to, and delivered on, a reply port.
            #expect(metrics.counterTotal(label: "runloopkit_port_messages_sent_total", dimensions: [("port", name), ("peer", "local")]) == 51)
            #expect(metrics.counterTotal(label: "runloopkit_port_messages_delivered_total", dimensions: [("port", name)]) == 51)
            #expect(metrics.counterTotal(label: "runloopkit_port_messages_sent_total", dimensions: [("port", "unnamed"), ("peer", "local")]) >= 1)
            #expect(metrics.counterTotal(label: "runloopkit_port_messages_delivered_total", dimensions: [("port", "unnamed")]) >= 1)

            // Drops by reason: a port with no handler.
            let unattended = try Port(transport: .inproc)
            try unattended.schedule(on: worker)
            for _ in 0..<3 { try unattended.send(msgid: 9, before: Date() + 30) }
            #expect(waitUntil(timeout: 60) { unattended.droppedMessageCount == 3 })
            try worker.performAndWait {}
            #expect(metrics.counterTotal(label: "runloopkit_port_messages_dropped_total", dimensions: [("port", "unnamed"), ("reason", "noHandler")]) == 3)

            // Failed sends by reason: a port invalidated.
            let closed = try Port(transport: .inproc)
            try PortNameServer.register(closed, name: name + "-closed")
            closed.invalidate()
            #expect(throws: PortError.self) { try closed.send(msgid: 1, before: Date() + 30) }
            #expect(metrics.counterTotal(label: "runloopkit_port_send_failures_total", dimensions: [("port", "unnamed"), ("peer", "local"), ("reason", "invalidPort")]) == 1)

            // Stopped: nothing more is counted.
            RunLoopKitMetrics.stop()
            for _ in 0..<5 { try right.send(msgid: 1, before: Date() + 30) }
            for _ in 0..<5 { #expect(delivered.wait(timeout: .now() + 60) == .success) }
            try worker.performAndWait {}
            #expect(metrics.counterTotal(label: "runloopkit_port_messages_sent_total", dimensions: [("port", name), ("peer", "local")]) == 51)
            #expect(metrics.counterTotal(label: "runloopkit_port_messages_delivered_total", dimensions: [("port", name)]) == 51)
        }
    }

    @Test("Metrics: a loop's passes, callouts by kind and lag (each pass's time awake), labelled by its thread's name, without taking the loop's monitor or the process's tracer")
    func loopFigures() async {
        await #expect(processExitsWith: .success) {
            final class Counting: RunLoopMonitor {
                let passes = Mutex(0)
                func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) { passes.withLock { $0 += 1 } }
            }
            let metrics = TestMetrics()
            let monitor = Counting(), tracer = Counting()
            let worker = LoopThread(name: "metrics-loop")
            try worker.start()
            defer { worker.stop() }
            let loop = try #require(worker.runLoop)
            loop.monitor = monitor
            RunLoop.tracer = tracer
            RunLoopKitMetrics.start(factory: metrics)
            try worker.performAndWait {}
            // A block that keeps the loop awake for 20 ms: a pass's lag at least that.
            try worker.performAndWait { _ = usleep(20_000) }
            for _ in 0..<10 { try worker.performAndWait {} }

            // Read on the loop's thread: every earlier callout has been
            // reported then. (The first block may have run in a pass begun
            // before the start: not counted.)
            let (passes, blocks) = try worker.performAndWait {
                (metrics.counterTotal(label: "runloopkit_loop_passes_total", dimensions: [("loop", "metrics-loop")]),
                 metrics.counterTotal(label: "runloopkit_loop_callouts_total", dimensions: [("loop", "metrics-loop"), ("kind", "block")]))
            }
            #expect(passes >= 1)
            #expect(blocks >= 11)
            // The pass of the 20 ms block is reported when it ends.
            #expect(waitUntil(timeout: 60) {
                _ = try? worker.performAndWait {}
                let lag = try? metrics.expectTimer("runloopkit_loop_lag_seconds", [("loop", "metrics-loop")])
                return lag?.values.contains { $0 >= 20_000_000 } == true
            })
            // The monitor and the tracer heard of passes too: neither was taken.
            #expect(monitor.passes.withLock { $0 } > 0 && tracer.passes.withLock { $0 } > 0)
            RunLoop.tracer = nil
            RunLoopKitMetrics.stop()
        }
    }

    @Test("Metrics: past the series limit, further ports share the series labelled 'other'")
    func seriesLimit() async {
        // An expectation that fails in the child is reported without its
        // text: the child also writes what it read to its standard error.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let metrics = TestMetrics()
            RunLoopKitMetrics.start(factory: metrics, seriesLimit: 2)
            let worker = LoopThread(name: "metrics-limit")
            try worker.start()
            defer { worker.stop() }
            let delivered = DispatchSemaphore(value: 0)
            var names: [String] = []
            var ports: [Port] = []
            for index in 0..<3 {
                let name = "metrics-limit-\(getpid())-\(index)"
                let port = try Port(transport: .ipc)
                try PortNameServer.register(port, name: name)
                port.setMessageHandler { _ in delivered.signal() }
                try port.schedule(on: worker)
                names.append(name)
                ports.append(port)
            }
            defer { names.forEach(PortNameServer.unregister) }
            // One at a time, in order: the first two names take the two series.
            for port in ports {
                try port.send(msgid: 1, before: Date() + 30)
                #expect(delivered.wait(timeout: .now() + 60) == .success)
            }
            try worker.performAndWait {}
            let label = "runloopkit_port_messages_delivered_total"
            let seen = names.prefix(2).map { metrics.counterTotal(label: label, dimensions: [("port", $0)]) }
            let third = metrics.counters(label: label, dimensions: [("port", names[2])]).count
            let other = metrics.counterTotal(label: label, dimensions: [("port", "other")])
            if seen != [1, 1] || third != 0 || other != 1 {
                let series = metrics.counters(label: label).map { "\($0.dimensions): \($0.totalValue)" }
                let report = "UNEXPECTED: first two \(seen), third's own series \(third), other \(other); series \(series)\n"
                _ = report.withCString { Glibc.write(2, $0, strlen($0)) }
            }
            #expect(seen == [1, 1])
            #expect(third == 0)
            #expect(other == 1)
            RunLoopKitMetrics.stop()
        }
        let childError = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(!childError.contains("UNEXPECTED"), "\(childError)")
    }

    @Test("Metrics: the tap's events and its drops (a tap with no reader drops every event), reported from the tap's thread")
    func tapFigures() async {
        await #expect(processExitsWith: .success) {
            let metrics = TestMetrics()
            RunLoopKitMetrics.start(factory: metrics)
            // An endpoint no reader listens at: every event is dropped (an
            // inproc one would queue them for a reader binding later).
            try PortTap.enable(endpoint: "ipc:///tmp/rlk-metrics-tap-nobody-\(getpid())")
            let port = try Port(transport: .inproc)
            let worker = LoopThread(name: "metrics-tap")
            try worker.start()
            defer { worker.stop() }
            let delivered = DispatchSemaphore(value: 0)
            port.setMessageHandler { _ in delivered.signal() }
            try port.schedule(on: worker)
            for _ in 0..<20 { try port.send(msgid: 1, before: Date() + 30) }
            for _ in 0..<20 { #expect(delivered.wait(timeout: .now() + 60) == .success) }
            // 20 sends and 20 deliveries, at least.
            #expect(waitUntil(timeout: 60) { metrics.counterTotal(label: "runloopkit_tap_events_total") >= 40 })
            #expect(waitUntil(timeout: 60) {
                metrics.counterTotal(label: "runloopkit_tap_dropped_events_total") == Int64(PortTap.droppedEventCount)
                    && PortTap.droppedEventCount >= 40
            })
            PortTap.disable()
            RunLoopKitMetrics.stop()
        }
    }

    @Test("Metrics: a tcp peer's connections, opened and ended by reason, labelled by its address, never its instance; a send right to its port is labelled by that peer")
    func peerFigures() async {
        await #expect(processExitsWith: .success) {
            _ = NetworkKeysFixture.shared
            let metrics = TestMetrics()
            RunLoopKitMetrics.start(factory: metrics)
            let peer = try NetworkPeerProcess.start(["serve", "127.0.0.1", "0"], child: 0)
            defer { peer.stop() }
            let right = try Port.fromDescriptor(NetworkPeerProcess.bytes(fromHex: #require(peer.waitForLine(starting: "PORT "))))
            let address = try #require(right.address.tcpEndpoint?.listener)
            _ = try right.sendRequest(msgid: 1, sendTimeout: 30, receiveTimeout: 60)
            #expect(metrics.counterTotal(label: "runloopkit_tcp_connections_opened_total", dimensions: [("peer", address)]) == 1)
            #expect(metrics.counterTotal(label: "runloopkit_port_messages_sent_total", dimensions: [("port", "unnamed"), ("peer", address)]) == 1)
            // One series, by address: nothing names the peer's instance.
            #expect(metrics.counters(label: "runloopkit_tcp_connections_opened_total").map { $0.dimensions.map(\.1) } == [[address]])
            // The peer goes: its connection ends, as lost.
            peer.stop()
            #expect(waitUntil(timeout: 60) {
                metrics.counterTotal(label: "runloopkit_tcp_connections_ended_total", dimensions: [("peer", address), ("reason", "lost")]) == 1
            })
            RunLoopKitMetrics.stop()
        }
    }

    @Test("Metrics: the example exports the figures with swift-prometheus, as a scraper reads them: the named port's deliveries, the reply port's, a drop by reason, the kitchen loop's passes")
    func exampleExportsPrometheusText() throws {
        let directory = makeTemporaryDirectory()
        defer { PortProcess.removeTree(directory) }
        let example = try SpawnedProgram(
            "metrics", ["--orders", "100"], environment: ["RUNLOOPKIT_RUNTIME_DIR": directory + "/runtime"], in: directory)
        #expect(example.waitForExit(timeout: 60) == 0, "\(example.errorOutput)")
        let lines = Set(example.output.split(separator: "\n").map(String.init))
        #expect(lines.contains("# TYPE runloopkit_port_messages_delivered_total counter"), "\(example.output)")
        // 100 orders and the request.
        #expect(lines.contains(#"runloopkit_port_messages_delivered_total{port="orders"} 101"#), "\(example.output)")
        #expect(lines.contains(#"runloopkit_port_messages_sent_total{port="orders",peer="local"} 101"#), "\(example.output)")
        #expect(lines.contains(#"runloopkit_port_messages_delivered_total{port="unnamed"} 1"#), "\(example.output)")
        #expect(lines.contains(#"runloopkit_port_messages_dropped_total{port="unnamed",reason="noHandler"} 1"#), "\(example.output)")
        #expect(lines.contains { $0.hasPrefix(#"runloopkit_loop_passes_total{loop="kitchen"} "#) }, "\(example.output)")
        #expect(lines.contains("# TYPE runloopkit_loop_lag_seconds histogram"), "\(example.output)")
    }
}
