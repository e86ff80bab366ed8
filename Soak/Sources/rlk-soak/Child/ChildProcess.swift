import Dispatch
import Glibc
import RunLoopKit

/// A child process: its workers, its chaos schedule, and a control thread
/// that answers the coordinator. Everything but the workers' own work
/// happens on the control thread.
final class ChildProcess: @unchecked Sendable {
    // @unchecked Sendable: `workers`, `chaos` and `controlPort` are used on
    // the control thread only, after `start` made them there.
    private let context: ChildContext
    private let control = LoopThread(name: "soak-control")
    private let workers: WorkerSet
    private let chaos: ChaosSchedule
    private var controlPort: Port?
    private let finished = DispatchSemaphore(value: 0)
    /// The ports this child hosts for the coordinator's checkpoint.
    private var ballast: RegistryBallast?

    private static let drainLimit = 60.0

    private init(context: ChildContext) {
        self.context = context
        workers = WorkerSet(context: context)
        chaos = ChaosSchedule(context: context, workers: workers)
    }

    static func run(_ options: ChildOptions) -> Never {
        let coordinator: Port
        do {
            coordinator = try PortNameServer.lookup(options.coordinatorName, timeout: .seconds(10))
        } catch {
            Console.fatal("child \(options.incarnation): cannot find the coordinator's port '\(options.coordinatorName)': \(error)")
        }
        // An orphan has nobody to answer: it leaves at once.
        coordinator.addInvalidationHandler { _ in
            Console.warn("rlk-soak child \(options.incarnation): the coordinator is gone; exiting")
            _exit(3)
        }
        let child = ChildProcess(context: ChildContext(options: options, coordinator: coordinator))
        do {
            try child.control.start()
            try child.control.performAndWait(timeout: .seconds(60)) { try child.start() }
        } catch {
            Console.fatal("child \(options.incarnation): cannot start: \(error)")
        }
        guard child.finished.wait(timeout: .now() + options.lifetimeLimit) == .success else {
            Console.fatal("child \(options.incarnation): never told to exit within \(options.lifetimeLimit) s")
        }
        child.control.stop()
        exit(0)
    }

    /// On the control thread: the control port, the workers, the chaos, hello.
    private func start() throws {
        let port = try Port(transport: .ipc)
        port.setMessageHandler { [unowned self] message in
            do {
                handle(try ControlMessage(message))
            } catch {
                context.violations.record("control: \(error)")
            }
        }
        try port.schedule(in: RunLoop.current, forMode: .default)
        try PortNameServer.register(port, name: context.options.controlName)
        controlPort = port
        for _ in 0..<context.options.threads { workers.startNew() }
        chaos.start()
        try ControlMessage.hello(incarnation: context.incarnation, pid: getpid()).send(to: context.coordinator, replyPort: port)
    }

    private func handle(_ message: ControlMessage) {
        switch message {
        case let .directory(directory):
            context.remotePorts.update(directory)
            let fresh = context.learnDead(directory.deadIncarnations)
            if !fresh.isEmpty { for endpoint in context.localEndpoints.all { endpoint.forgetSenders(of: fresh) } }
        case let .pause(lookUp, host, tag):
            pause()
            let hosted = host ? hostBallast(tag: tag) : []
            do { try RegistryBallast.lookUp(lookUp) } catch {
                context.violations.record("checkpoint: cannot look up the coordinator's ballast: \(error)")
            }
            context.send(.paused(incarnation: context.incarnation, ballast: hosted))
        case .measure:
            var sample = ProcessProbe.settledSample()
            sample.soakObjects = ["endpoints": Endpoint.alive.load(ordering: .relaxed),
                                  "live endpoints": context.localEndpoints.all.count]
            context.send(.sample(incarnation: context.incarnation, sample))
        case .resume:
            ballast?.invalidate()
            ballast = nil
            _ = workers.forEach("resume") { $0.resume() }
            chaos.start()
        case .stopSending:
            chaos.stop()
            let streams = workers.forEach("stop sending") { $0.stopSending() }.flatMap { $0 }
            context.send(.stopReport(StopReport(
                incarnation: context.incarnation, streams: streams,
                liveEndpoints: context.localEndpoints.all.map(\.id),
                suspectedEndpoints: context.remotePorts.suspects)))
        case let .drain(expectations):
            drain(expectations)
        case .exit:
            chaos.stop()
            for worker in workers.all { workers.retire(worker) }
            controlPort?.invalidate()
            finished.signal()
        default:
            context.violations.record("control: unexpected \(message)")
        }
    }

    /// The quiet state of a checkpoint: no events, no streams, no send
    /// rights to other processes, and every port's send channel made (by a
    /// probe), so that two checkpoints find the same descriptors open.
    private func pause() {
        chaos.stop()
        _ = workers.forEach("pause") { $0.pause() }
        context.remotePorts.releaseAll()
        for endpoint in context.localEndpoints.all {
            let probe = TrafficMessage(senderID: 0, streamID: 0, number: 0)
            do {
                try endpoint.port.send(msgid: TrafficMessage.Kind.probe.rawValue, components: [.data(probe.withBytes { Data($0) })],
                                       before: Date() + 2)
            } catch {
                context.violations.record("probe of endpoint \(Identifiers.describe(endpoint.id)) failed: \(error)")
            }
        }
    }

    private func hostBallast(tag: String) -> [String] {
        do {
            let hosted = try RegistryBallast(tag: tag)
            ballast = hosted
            // The coordinator's control port keeps the last few reply ports
            // it was sent (with their send channels): fill that cache too.
            for port in hosted.ports.prefix(RegistryBallast.descriptorCacheFill) {
                try ControlMessage.descriptorBallast.send(to: context.coordinator, replyPort: port)
            }
            return hosted.names
        } catch {
            context.violations.record("checkpoint: cannot host a ballast: \(error)")
            return []
        }
    }

    /// Waits until every stream the coordinator expects has arrived in
    /// full (or the limit), then reports what each receiver found.
    private func drain(_ expectations: [Expectation]) {
        let start = MonotonicTime.now()
        let perPort = Dictionary(grouping: expectations, by: \.destination)
        context.drain.begin(ports: perPort.count)
        for (id, expected) in perPort {
            guard let endpoint = context.localEndpoints.endpoint(id) else {
                context.violations.record("drain: endpoint \(Identifiers.describe(id)) expected alive is gone")
                context.drain.endpointMet()
                continue
            }
            let wanted = Dictionary(expected.map { ($0.key, $0.sent) }, uniquingKeysWith: max)
            if endpoint.expect(wanted) { context.drain.endpointMet() }
        }
        context.drain.endpointMet()
        let complete = context.drain.wait(seconds: Self.drainLimit)
        let results = expectations.map { expectation in
            let found = context.localEndpoints.endpoint(expectation.destination)?.result(for: expectation.key) ?? (received: 0, violations: 0)
            return ExpectationResult(expectation: expectation, received: found.received, violations: found.violations)
        }
        context.send(.drainReport(DrainReport(
            incarnation: context.incarnation, results: results,
            drainSeconds: MonotonicTime.seconds(MonotonicTime.now() - start), drainComplete: complete,
            statistics: context.counters.snapshot, notices: context.remotePorts.notices.all,
            violationCount: context.violations.count, violationSamples: context.violations.samples)))
    }
}
