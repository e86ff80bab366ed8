import CoreMetrics
import MetricsTestKit
import RunLoopKit
import RunLoopKitMetrics
@_spi(RunLoopKitInternals) import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

/// swift-metrics' test backend, except that the counter of drops calls
/// `beforeDrop` before it counts: what a reader on another thread could see
/// of the port at that moment.
final class DropWatchingFactory: MetricsFactory, @unchecked Sendable {
    let base: TestMetrics
    let beforeDrop: @Sendable () -> Void

    init(base: TestMetrics, beforeDrop: @escaping @Sendable () -> Void) {
        self.base = base
        self.beforeDrop = beforeDrop
    }

    final class WatchedCounter: CounterHandler, @unchecked Sendable {
        let base: any CounterHandler
        let before: @Sendable () -> Void
        init(base: any CounterHandler, before: @escaping @Sendable () -> Void) {
            self.base = base
            self.before = before
        }
        func increment(by amount: Int64) {
            before()
            base.increment(by: amount)
        }
        func reset() { base.reset() }
    }

    func makeCounter(label: String, dimensions: [(String, String)]) -> any CounterHandler {
        let counter = base.makeCounter(label: label, dimensions: dimensions)
        guard label == "runloopkit_port_messages_dropped_total" else { return counter }
        return WatchedCounter(base: counter, before: beforeDrop)
    }
    func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> any FloatingPointCounterHandler {
        base.makeFloatingPointCounter(label: label, dimensions: dimensions)
    }
    func makeMeter(label: String, dimensions: [(String, String)]) -> any MeterHandler {
        base.makeMeter(label: label, dimensions: dimensions)
    }
    func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> any RecorderHandler {
        base.makeRecorder(label: label, dimensions: dimensions, aggregate: aggregate)
    }
    func makeTimer(label: String, dimensions: [(String, String)]) -> any TimerHandler {
        base.makeTimer(label: label, dimensions: dimensions)
    }
    func destroyCounter(_ handler: any CounterHandler) {
        base.destroyCounter((handler as? WatchedCounter)?.base ?? handler)
    }
    func destroyMeter(_ handler: any MeterHandler) { base.destroyMeter(handler) }
    func destroyFloatingPointCounter(_ handler: any FloatingPointCounterHandler) { base.destroyFloatingPointCounter(handler) }
    func destroyRecorder(_ handler: any RecorderHandler) { base.destroyRecorder(handler) }
    func destroyTimer(_ handler: any TimerHandler) { base.destroyTimer(handler) }
}

@Suite("Metrics: the order of a drop's records", .blocksThreads)
struct MetricsDropOrderTests {
    @Test("Metrics: a drop is in the metrics before it is in the port's counts: whoever sees droppedMessageCount go up finds the drop's series too")
    func aDropIsInTheMetricsFirst() async {
        await #expect(processExitsWith: .success) {
            let metrics = TestMetrics()
            let port = Locked<Port?>(nil)
            // What the port's count said while the metric was being counted.
            let countWhileRecording = Locked<UInt64?>(nil)
            RunLoopKitMetrics.start(factory: DropWatchingFactory(base: metrics) {
                let count = port.withLock { $0 }?.droppedMessageCount
                countWhileRecording.withLock { $0 = count }
            })
            let worker = LoopThread(name: "metrics-drop-order")
            try worker.start()
            defer { worker.stop() }
            // No handler: what it is sent is dropped.
            let unattended = try Port(transport: .inproc)
            port.withLock { $0 = unattended }
            try unattended.schedule(on: worker)
            try unattended.send(msgid: 9, before: Date() + 30)
            #expect(waitUntil(timeout: 60) { unattended.droppedMessageCount == 1 })
            #expect(metrics.counterTotal(label: "runloopkit_port_messages_dropped_total", dimensions: [("port", "unnamed"), ("reason", "noHandler")]) == 1)
            #expect(countWhileRecording.withLock { $0 } == 0, "the port counted the drop before the metrics did")
        }
    }
}
