// Order and uniqueness of what several senders sent, as it arrives.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

/// Checks that messages from each sender arrive in order, each once: sender
/// `s` numbers its messages 0, 1, 2, ...
final class SequenceChecker: Sendable {
    private struct State {
        var next: [Int]
        var problems: [String] = []
        var total = 0
    }

    private let state: Locked<State>

    init(senders: Int) { state = Locked(State(next: Array(repeating: 0, count: senders))) }

    /// Records message `sequence` of `sender`.
    func record(sender: Int, sequence: Int) {
        state.withLock { state in
            state.total += 1
            guard sender >= 0 && sender < state.next.count else {
                if state.problems.count < 10 { state.problems.append("message from unknown sender \(sender)") }
                return
            }
            if sequence != state.next[sender], state.problems.count < 10 {
                state.problems.append("sender \(sender): got \(sequence), expected \(state.next[sender])")
            }
            state.next[sender] = max(state.next[sender], sequence + 1)
        }
    }

    func problem(_ text: String) { state.withLock { if $0.problems.count < 10 { $0.problems.append(text) } } }

    var problems: [String] { state.withLock { $0.problems } }
    var total: Int { state.withLock { $0.total } }
    /// The next number expected from each sender: how many arrived in order.
    var next: [Int] { state.withLock { $0.next } }
}
