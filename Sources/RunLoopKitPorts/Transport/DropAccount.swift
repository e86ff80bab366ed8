import Logging
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A local port's account of what it dropped (S-PORT-7): every drop counted
/// per reason, and logged at most once per reason a second, the line
/// carrying how many it stands for since the last one; what is left
/// unlogged is flushed when the port is invalidated and at exit.
///
/// A flood of bad input can then neither flood the log nor go unseen, and
/// the counts in the lines add up to the drops. Lines are made under the
/// account's lock but written by `emitPending()`, which callers run with no
/// library lock held: a log handler is the program's code (docs/design.md,
/// "Locks and user code").
final class DropAccount: Sendable {
    private static let logger = Logger(label: "RunLoopKit.Port")
    /// The shortest time between two lines for one reason.
    static let lineInterval: UInt64 = 1_000_000_000

    /// Which port, for the lines.
    private let portName: String
    /// All drops, read without the lock (`Port.droppedMessageCount`).
    private let total = Atomic<UInt64>(0)
    /// The reason of the latest drop, as its index + 1 (0: none yet): what
    /// the tap reports of a drop the delivering batch has just seen.
    private let latest = Atomic<Int>(0)

    private struct State {
        var counts = [UInt64](repeating: 0, count: PortDropReason.allCases.count)
        /// When the last line for each reason was made (0: never).
        var lastLine = [UInt64](repeating: 0, count: PortDropReason.allCases.count)
        /// Drops of each reason since its last line.
        var unlogged = [UInt64](repeating: 0, count: PortDropReason.allCases.count)
        /// Lines made, not yet written.
        var pending: [String] = []
    }

    private let state = Locked(State())

    init(portName: String) { self.portName = portName }

    var totalCount: UInt64 { total.load(ordering: .relaxed) }

    /// The reason of the latest drop, if any.
    var lastReason: PortDropReason? {
        let index = latest.load(ordering: .relaxed)
        return index == 0 ? nil : PortDropReason.allCases[index - 1]
    }

    var counts: PortDropCounts { PortDropCounts(state.withLock { $0.counts }) }

    /// Counts one drop; makes a line if none was made for this reason in
    /// the last second. Any thread, any lock held: it only records.
    func record(_ reason: PortDropReason, _ detail: @autoclosure () -> String) {
        total.wrappingAdd(1, ordering: .relaxed)
        latest.store(reason.index + 1, ordering: .relaxed)
        let now = MonotonicClock.now()
        state.withLock { state in
            let index = reason.index
            state.counts[index] &+= 1
            state.unlogged[index] &+= 1
            guard state.lastLine[index] == 0 || now &- state.lastLine[index] >= Self.lineInterval else { return }
            state.pending.append(line(reason, count: state.unlogged[index], total: state.counts[index], detail: detail()))
            state.lastLine[index] = now
            state.unlogged[index] = 0
        }
    }

    /// Makes a line for every reason with drops not yet in one (at
    /// invalidation, at exit), then writes the lines. No library lock held.
    func flush() {
        state.withLock { state in
            for reason in PortDropReason.allCases where state.unlogged[reason.index] > 0 {
                let index = reason.index
                state.pending.append(line(reason, count: state.unlogged[index], total: state.counts[index], detail: nil))
                state.unlogged[index] = 0
            }
        }
        emitPending()
    }

    /// Writes the lines made so far. No library lock held.
    func emitPending() {
        let lines = state.withLock { state -> [String] in
            guard !state.pending.isEmpty else { return [] }
            defer { state.pending.removeAll() }
            return state.pending
        }
        for text in lines { Self.logger.warning("\(text)") }
    }

    /// "port P: dropped 1 message (malformed: bad magic): not a RunLoopKit
    /// message (bad magic); 7 so far for this reason".
    private func line(_ reason: PortDropReason, count: UInt64, total: UInt64, detail: String?) -> String {
        let what = count == 1 ? "1 message" : "\(count) messages"
        let since = detail == nil ? " since the last line" : ""
        let example = detail.map { ": \($0)" } ?? ""
        return "port \(portName): dropped \(what) (\(reason))\(since)\(example); \(total) so far for this reason"
    }
}
