import Dispatch
import Synchronization

/// The end of the drain: every receiving port has received what its
/// senders sent. Counts the ports still waiting; the last one's handler
/// releases the waiter.
final class DrainWaiter: Sendable {
    private let waiting = Mutex(0)
    private let finished = DispatchSemaphore(value: 0)

    /// Before the ports are told what to expect: `ports` of them will
    /// report, plus one for the caller (`endpointMet()` once all are told),
    /// so that a port that finishes early cannot end the wait too soon.
    func begin(ports: Int) { waiting.withLock { $0 = ports + 1 } }

    func endpointMet() {
        let done = waiting.withLock { waiting in
            waiting -= 1
            return waiting == 0
        }
        if done { finished.signal() }
    }

    /// True once every port has all it waits for; false at the timeout.
    func wait(seconds: Double) -> Bool { finished.wait(timeout: .now() + seconds) == .success }
}
