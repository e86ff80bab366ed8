import Dispatch
import Synchronization

/// The children's answers, handed from the coordinator's control thread to
/// its main thread, which waits for them with a deadline.
final class ControlInbox: Sendable {
    private let messages = Mutex([ControlMessage]())
    private let arrived = DispatchSemaphore(value: 0)

    func post(_ message: ControlMessage) {
        messages.withLock { $0.append(message) }
        arrived.signal()
    }

    /// The next message, or nil once `deadline` (CLOCK_MONOTONIC, ns) passes.
    func next(before deadline: UInt64) -> ControlMessage? {
        while true {
            let now = MonotonicTime.now()
            guard now < deadline else { return nil }
            guard arrived.wait(timeout: .now() + .nanoseconds(Int(deadline - now))) == .success else { return nil }
            if let message = messages.withLock({ $0.isEmpty ? nil : $0.removeFirst() }) { return message }
        }
    }
}
