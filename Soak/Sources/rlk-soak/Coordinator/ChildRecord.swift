import Dispatch
import RunLoopKit
import Synchronization

/// One child process as the coordinator knows it, from its spawn to its exit.
final class ChildRecord: Sendable {
    /// What the task that spawned the child does next.
    enum Order: Sendable { case kill, release }

    private struct State {
        var pid: Int32?
        var control: Port?
        var order: Order?
        var waiter: CheckedContinuation<Order, Never>?
        var killInstant: UInt64?
        var controlInvalidInstant: UInt64?
        var termination: String?
        var killedBySignal9 = false
        var exitedCleanly = false
    }

    let slot: Int
    let incarnation: UInt32
    let startInstant = MonotonicTime.now()
    private let state = Mutex(State())
    private let helloArrived = DispatchSemaphore(value: 0)
    private let exited = DispatchSemaphore(value: 0)

    init(slot: Int, incarnation: UInt32) {
        self.slot = slot
        self.incarnation = incarnation
    }

    var pid: Int32? { state.withLock { $0.pid } }
    var control: Port? { state.withLock { $0.control } }
    var killInstant: UInt64? { state.withLock { $0.killInstant } }
    var controlInvalidInstant: UInt64? { state.withLock { $0.controlInvalidInstant } }
    var termination: String? { state.withLock { $0.termination } }
    var killedBySignal9: Bool { state.withLock { $0.killedBySignal9 } }
    var exitedCleanly: Bool { state.withLock { $0.exitedCleanly } }
    var wasOrderedToDie: Bool { state.withLock { $0.order == .kill } }

    func started(pid: Int32) { state.withLock { $0.pid = pid } }

    /// The child said hello from `control`. The coordinator's send right to
    /// it is watched like any other: when the child dies it must become
    /// invalid within the bound.
    func helloReceived(control: Port) {
        state.withLock { $0.control = control }
        control.addInvalidationHandler { [self] _ in
            let now = MonotonicTime.now()
            state.withLock { state in
                state.controlInvalidInstant = state.controlInvalidInstant ?? now
                // Let the send right go: a dead child's must not stay open.
                state.control = nil
            }
            // A child that died by itself: let its task collect the status.
            give(.release)
        }
        helloArrived.signal()
    }

    func waitForHello(seconds: Double) -> Bool { helloArrived.wait(timeout: .now() + seconds) == .success }

    /// The spawning task's body waits here while the child runs.
    func nextOrder() async -> Order {
        await withCheckedContinuation { continuation in
            let ready: Order? = state.withLock { state in
                if let order = state.order { return order }
                state.waiter = continuation
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    /// Only the first order counts.
    func give(_ order: Order) {
        let waiter: CheckedContinuation<Order, Never>? = state.withLock { state in
            guard state.order == nil else { return nil }
            state.order = order
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: order)
    }

    func killing(at instant: UInt64) { state.withLock { $0.killInstant = instant } }

    func ended(_ description: String, cleanly: Bool, bySignal9: Bool) {
        state.withLock { state in
            state.termination = description
            state.exitedCleanly = cleanly
            state.killedBySignal9 = bySignal9
        }
        exited.signal()
    }

    func waitForExit(seconds: Double) -> Bool { exited.wait(timeout: .now() + seconds) == .success }
}
