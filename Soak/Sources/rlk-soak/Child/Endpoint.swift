import RunLoopKit
import Synchronization

/// A receiving port of a worker, with its ledger. Its handler is of one of
/// the two kinds (`PortMessage`, or `PortMessageView` read in place), and
/// the chaos schedule may ask it, from another thread, to swap to the
/// other kind or to run its loop nested: both happen inside the handler,
/// at the next message, so in the middle of a batch.
final class Endpoint: Sendable {
    let id: UInt64
    let port: Port
    /// The name other processes look it up by; nil for an inproc port.
    let name: String?
    let workerSerial: UInt32
    private let context: ChildContext
    private let ledger = Mutex(ReceiveLedger())
    private let swapRequested = Atomic(false)
    private let nestedRunRequested = Atomic(false)
    private let readsInPlace = Atomic(false)
    /// Endpoints not yet freed, for the checkpoints' report: a count that
    /// grows with churn would be the soak's own leak, not RunLoopKit's.
    static let alive = Atomic(0)

    /// Makes the port, names it if it is ipc, and schedules it on `loop`
    /// (the calling thread's) in the default mode and the nested one.
    init(id: UInt64, transport: Port.Transport, workerSerial: UInt32, readsInPlace: Bool,
         context: ChildContext, loop: RunLoop) throws {
        self.id = id
        self.workerSerial = workerSerial
        self.context = context
        port = try Port(transport: transport)
        if transport == .ipc {
            let name = "soak\(context.coordinatorPID)-\(String(id, radix: 16))"
            try PortNameServer.register(port, name: name)
            self.name = name
        } else {
            name = nil
        }
        // Counted once every property is set: from here a throw runs deinit.
        Self.alive.add(1, ordering: .relaxed)
        if readsInPlace { installInPlaceHandler() } else { installMessageHandler() }
        try port.schedule(in: loop, forMode: .default)
        try port.schedule(in: loop, forMode: ChildContext.nestedMode)
    }

    deinit { Self.alive.subtract(1, ordering: .relaxed) }

    var directoryEntry: DirectoryEntry? { name.map { DirectoryEntry(name: $0, endpointID: id) } }

    /// Asks the handler to set the other kind of handler at its next message.
    func requestHandlerSwap() { swapRequested.store(true, ordering: .relaxed) }

    /// Asks the handler to run its loop in the nested mode at its next message.
    func requestNestedRun() { nestedRunRequested.store(true, ordering: .relaxed) }

    // The handlers capture the endpoint, which holds the port: the cycle
    // lasts until `invalidate()`, which releases the handler.
    private func installMessageHandler() {
        readsInPlace.store(false, ordering: .relaxed)
        port.setMessageHandler { [self] message in
            guard message.components.count == 1, let data = message.dataComponents.first else {
                context.violations.record("endpoint \(Identifiers.describe(id)): a message of \(message.components.count) components")
                return
            }
            data.withUnsafeBytes { handle(msgid: message.msgid, bytes: $0) }
        }
    }

    private func installInPlaceHandler() {
        readsInPlace.store(true, ordering: .relaxed)
        port.setInPlaceMessageHandler { [self] message in
            guard message.componentCount == 1, !message.isPort(at: 0) else {
                context.violations.record("endpoint \(Identifiers.describe(id)): a message of \(message.componentCount) components")
                return
            }
            handle(msgid: message.msgid, bytes: message.unsafeBytes(ofComponent: 0))
        }
    }

    private func handle(msgid: UInt32, bytes: UnsafeRawBufferPointer) {
        guard let kind = TrafficMessage.Kind(rawValue: msgid), let message = TrafficMessage(bytes: bytes) else {
            context.violations.record("endpoint \(Identifiers.describe(id)): malformed message, msgid \(msgid), \(bytes.count) bytes")
            return
        }
        let (outcome, metExpectations) = ledger.withLock { ledger in
            let unmetBefore = ledger.unmetExpectations
            let outcome = ledger.record(kind, message, isDead: context.isDead)
            return (outcome, unmetBefore > 0 && ledger.unmetExpectations == 0)
        }
        switch outcome {
        case .inOrder: break
        case let .violation(description): context.violations.record("endpoint \(Identifiers.describe(id)): \(description)")
        case .verifiedEnd: context.counters.update { $0.streamsVerifiedByMarker += 1 }
        case .lateFromDead: context.counters.update { $0.lateMessagesFromDead += 1 }
        }
        if kind == .data { context.counters.update { $0.messagesReceived += 1 } }
        if metExpectations { context.drain.endpointMet() }
        if swapRequested.exchange(false, ordering: .relaxed) { swapHandler() }
        if nestedRunRequested.exchange(false, ordering: .relaxed) { runNested() }
    }

    /// From inside the handler: the batch's next message goes to the new one.
    private func swapHandler() {
        if readsInPlace.load(ordering: .relaxed) { installMessageHandler() } else { installInPlaceHandler() }
        context.counters.update { $0.handlerSwaps += 1 }
    }

    /// From inside the handler: a short run of the loop in the nested mode,
    /// where this port and its worker's others are scheduled too, so that
    /// messages of this very port arrive while its handler is on the stack.
    private func runNested() {
        _ = RunLoop.current.run(mode: ChildContext.nestedMode, before: Date() + 0.005)
        context.counters.update { $0.nestedRuns += 1 }
    }

    func invalidate() { port.invalidate() }

    /// The streams of dead processes can tell nothing more: let them go.
    func forgetSenders(of dead: Set<UInt32>) { ledger.withLock { $0.forgetSenders(of: dead) } }

    /// Starts the drain for this port; true if it already has all it waits for.
    func expect(_ wanted: [StreamKey: UInt64]) -> Bool {
        ledger.withLock { ledger in
            ledger.expect(wanted)
            return ledger.unmetExpectations == 0
        }
    }

    func result(for key: StreamKey) -> (received: UInt64, violations: Int) { ledger.withLock { $0.result(for: key) } }
}
