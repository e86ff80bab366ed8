import RunLoopKit

/// The random events of one child, drawn from its seeded generator at
/// random intervals on the control thread: LoopThreads stopped and new
/// ones started, ports invalidated (from this thread, while their own
/// thread may be delivering) and new ones made, handlers swapped between
/// the two kinds and nested runs (both inside a handler, mid-batch),
/// `maxMessagesPerCallout` varied, streams closed early.
final class ChaosSchedule: @unchecked Sendable {
    // @unchecked Sendable: used only on the control thread.
    private let context: ChildContext
    private let workers: WorkerSet
    private var generator: SeededGenerator
    private var timer: Timer?

    private static let batchLimits = [1, 2, 3, 5, 8, 32, 64, 1000]

    init(context: ChildContext, workers: WorkerSet) {
        self.context = context
        self.workers = workers
        generator = SeededGenerator(seed: context.options.seed, stream: UInt64(context.incarnation) << 8 | 0xC4)
    }

    /// Starts drawing events; called on the control thread.
    func start() {
        guard timer == nil else { return }
        scheduleNext()
    }

    /// Stops drawing events; the one in progress, if any, has finished
    /// (both run on the control thread).
    func stop() {
        timer?.invalidate()
        timer = nil
    }

    private func scheduleNext() {
        let delay = 0.02 + Double(generator.next() % 100) / 1000
        do {
            let timer = try Timer(timeInterval: delay, repeats: false) { [unowned self] _ in
                guard self.timer != nil else { return }
                performOneEvent()
                scheduleNext()
            }
            RunLoop.current.add(timer, forMode: .default)
            self.timer = timer
        } catch {
            Console.fatal("chaos timer: \(error)")
        }
    }

    private func performOneEvent() {
        switch generator.next() % 20 {
        case 0: restartWorker()
        case 1...3: replaceEndpoint()
        case 4...8: randomEndpoint()?.requestHandlerSwap()
        case 9...12: randomEndpoint()?.requestNestedRun()
        case 13...16: varyBatchLimit()
        default: rotateStream()
        }
    }

    private func randomEndpoint() -> Endpoint? { context.localEndpoints.random(using: &generator) }

    private func restartWorker() {
        guard let worker = workers.random(using: &generator) else { return }
        workers.retire(worker)
        workers.startNew()
        context.counters.update { $0.workerRestarts += 1 }
    }

    /// Invalidates a port from this thread while its own thread may be in
    /// its handler, then has its worker make a new one.
    private func replaceEndpoint() {
        guard let endpoint = randomEndpoint(), context.localEndpoints.remove(endpoint) else { return }
        endpoint.invalidate()
        if endpoint.name != nil { context.announce(removed: [endpoint.id]) }
        context.counters.update { $0.endpointInvalidations += 1 }
        guard let worker = workers.worker(serial: endpoint.workerSerial) else { return }
        // Not waited for: the worker may be busy; a retired one makes none.
        try? worker.thread.perform { [context] in
            do { try worker.replace(endpoint) } catch {
                context.violations.record("worker \(Identifiers.describe(worker.senderID)): cannot make a port: \(error)")
            }
        }
    }

    private func varyBatchLimit() {
        guard let endpoint = randomEndpoint() else { return }
        endpoint.port.maxMessagesPerCallout = Self.batchLimits[Int(generator.next() % UInt64(Self.batchLimits.count))]
        context.counters.update { $0.batchLimitChanges += 1 }
    }

    private func rotateStream() {
        guard let worker = workers.random(using: &generator) else { return }
        try? worker.thread.perform { worker.rotateStream() }
    }
}
