// How a child that floods its parent knows that everything arrived (the
// flow tests of Transport/).
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

/// The parent's side of "tell me when you have everything": the child sends
/// a message whose reply port is its acknowledgement port, and once the
/// expected number of messages has arrived the parent sends an empty message
/// there, from the receiving loop thread. A child that waits for it never
/// exits with messages in flight (see `sendsAreFlushedAtExit` for that case).
final class Acknowledger: Sendable {
    private struct State {
        var expected: Int
        var received = 0
        var replyPort: Port?
        var acknowledged = false
        var problems: [String] = []
    }

    private let state: Locked<State>

    init(expecting count: Int) { state = Locked(State(expected: count)) }

    func expect(_ count: Int) { state.withLock { $0.expected = count } }

    func hello(_ message: PortMessage) {
        state.withLock { $0.replyPort = message.replyPort }
        acknowledgeIfDone()
    }

    func received() {
        state.withLock { $0.received += 1 }
        acknowledgeIfDone()
    }

    var problems: [String] { state.withLock { $0.problems } }

    private func acknowledgeIfDone() {
        let port: Port? = state.withLock { state in
            guard !state.acknowledged, state.expected > 0, state.received >= state.expected, let port = state.replyPort else { return nil }
            state.acknowledged = true
            return port
        }
        guard let port else { return }
        do {
            try port.send(msgid: 1, before: Date() + 10)
        } catch {
            state.withLock { $0.problems.append("acknowledging failed: \(error)") }
        }
    }
}
