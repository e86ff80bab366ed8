import Dispatch
import Logging
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A local port's account of what it dropped (S-PORT-7): every drop counted
/// per reason, and logged at most once per reason a second, the line
/// carrying how many it stands for since the last one and the fault of the
/// first of them. What a line could not carry yet (drops within the second)
/// is written within about a second of the last drop of its reason, quiet
/// or not, by a timer armed only while such drops wait; the rest is
/// flushed when the port is invalidated and at exit.
///
/// A flood of bad input can then neither flood the log nor go unseen, and
/// the counts in the lines add up to the drops. Lines are made under the
/// account's lock but written by `emitPending()`, which callers run with no
/// library lock held: a log handler is the program's code (docs/design.md,
/// "Locks and user code"). The timer costs the message path nothing: it is
/// armed by a drop, never by a delivered message.
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
        /// The fault of the first of those drops: the one the line gives.
        var firstFault = [String?](repeating: nil, count: PortDropReason.allCases.count)
        /// Lines made, not yet written.
        var pending: [String] = []
        /// A timer is armed (or about to be, by `emitPending`) to write
        /// the drops that wait for their reason's second to pass.
        var timerArmed = false
        /// `emitPending` must arm the timer.
        var timerWanted = false
        /// The port whose drops these are, for metrics (`owned(by:)`);
        /// nil for the tcp endpoint's account.
        weak var owner: Port?
    }

    private let state = Locked(State())

    init(portName: String) { self.portName = portName }

    /// Names the port these drops are counted for in metrics.
    func owned(by port: Port) {
        state.withLock { $0.owner = port }
    }

    var totalCount: UInt64 { total.load(ordering: .acquiring) }

    /// The reason of the latest drop, if any.
    var lastReason: PortDropReason? {
        let index = latest.load(ordering: .relaxed)
        return index == 0 ? nil : PortDropReason.allCases[index - 1]
    }

    var counts: PortDropCounts { PortDropCounts(state.withLock { $0.counts }) }

    /// Lines made and not yet written (`emitPending` writes them).
    var unwrittenLineCount: Int { state.withLock { $0.pending.count } }

    /// Counts one drop; makes a line if none was made for this reason in
    /// the last second, else asks for the timer. Any thread, any lock held:
    /// it only records.
    func record(_ reason: PortDropReason, _ detail: @autoclosure () -> String) {
        record(reason, detail(), at: MonotonicClock.now())
    }

    /// `record`, then `emitPending`: for a caller that holds no library
    /// lock. Out of line: a drop is rare, and its code would otherwise sit
    /// between a message path's hot parts (docs/performance.md, "Over tcp").
    @inline(never)
    func recordAndEmit(_ reason: PortDropReason, _ detail: @autoclosure () -> String) {
        record(reason, detail(), at: MonotonicClock.now())
        emitPending()
    }

    /// `record`, for a drop seen at `now`: read before the lock, so that
    /// another thread may have made a line after it (`isDue`).
    func record(_ reason: PortDropReason, _ detail: @autoclosure () -> String, at now: UInt64) {
        // In the metrics first: whoever sees the drop in the counts below
        // (`droppedMessageCount`, `dropCounts`) finds it there too.
        if PortMetrics.attached.load(ordering: .relaxed) { recordMetric(reason, of: state.withLock { $0.owner }) }
        total.wrappingAdd(1, ordering: .releasing)
        latest.store(reason.index + 1, ordering: .relaxed)
        state.withLock { state in
            let index = reason.index
            state.counts[index] &+= 1
            if state.unlogged[index] == 0 { state.firstFault[index] = detail() }
            state.unlogged[index] &+= 1
            if Self.isDue(state, index, now: now) {
                makeLine(&state, index, now: now, atDrop: true)
            } else if !state.timerArmed {
                state.timerArmed = true
                state.timerWanted = true
            }
        }
    }

    /// Counts the drop in the attached metrics recorder: in its port's
    /// series, or, for drops of the tcp endpoint, in its own.
    private func recordMetric(_ reason: PortDropReason, of owner: Port?) {
        if let owner {
            owner.metricsSeries()?.dropped(reason)
        } else {
            PortMetrics.current?.series(port: Self.endpointSeries, peer: nil).dropped(reason)
        }
    }

    /// The series of drops that no port of this process was meant to have
    /// (the tcp endpoint's: another instance, a port closed meanwhile).
    static let endpointSeries = "tcp endpoint"

    /// Makes a line for every reason with drops not yet in one (at
    /// invalidation, at exit), then writes the lines. No library lock held.
    func flush() {
        let now = MonotonicClock.now()
        state.withLock { state in
            for reason in PortDropReason.allCases where state.unlogged[reason.index] > 0 {
                makeLine(&state, reason.index, now: now, atDrop: false)
            }
        }
        emitPending()
    }

    /// Writes the lines made so far, and arms the timer if a drop asked for
    /// it. No library lock held.
    func emitPending() {
        let (lines, armIn) = state.withLock { state -> ([String], UInt64?) in
            let lines = state.pending
            if !lines.isEmpty { state.pending.removeAll() }
            guard state.timerWanted else { return (lines, nil) }
            state.timerWanted = false
            return (lines, Self.delayToNextDue(state, now: MonotonicClock.now()))
        }
        for text in lines { Self.logger.warning("\(text)") }
        if let armIn { armTimer(in: armIn) }
    }

    /// The timer: lines for the reasons whose second has passed; armed
    /// again for the others, if any.
    private func timerFired() {
        let now = MonotonicClock.now()
        state.withLock { state in
            state.timerArmed = false
            for reason in PortDropReason.allCases where state.unlogged[reason.index] > 0 {
                if Self.isDue(state, reason.index, now: now) {
                    makeLine(&state, reason.index, now: now, atDrop: false)
                } else {
                    state.timerArmed = true
                    state.timerWanted = true
                }
            }
        }
        emitPending()
    }

    private func armTimer(in nanoseconds: UInt64) {
        // A dispatch timer, not one on the receiving loop: the loop may be
        // stopped, or running a mode the port is not in, while drops wait.
        // It holds the account (a second at most): a weak reference would
        // give the account a side table that LeakSanitizer, once the timer
        // is gone, reports as leaked while the port lives on.
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .nanoseconds(Int(clamping: nanoseconds))) {
            self.timerFired()
        }
    }

    /// Whether a line for reason `index` may be made at `now`. A `now` read
    /// before another thread made a line is earlier than that line: not
    /// due (subtracted as it was, it wrapped round to a huge interval, and
    /// two lines came within the same second under load).
    private static func isDue(_ state: State, _ index: Int, now: UInt64) -> Bool {
        let last = state.lastLine[index]
        return last == 0 || (now >= last && now - last >= lineInterval)
    }

    /// How long until the first reason with waiting drops may have its line.
    private static func delayToNextDue(_ state: State, now: UInt64) -> UInt64 {
        var delay = lineInterval
        for index in state.unlogged.indices where state.unlogged[index] > 0 {
            let due = state.lastLine[index] &+ lineInterval
            delay = min(delay, due > now ? due - now : 0)
        }
        return delay
    }

    private func makeLine(_ state: inout State, _ index: Int, now: UInt64, atDrop: Bool) {
        let reason = PortDropReason.allCases[index]
        state.pending.append(line(reason, count: state.unlogged[index], total: state.counts[index],
                                  firstFault: state.firstFault[index] ?? "", atDrop: atDrop))
        state.lastLine[index] = now
        state.unlogged[index] = 0
        state.firstFault[index] = nil
    }

    /// "port P: dropped 1 message (malformed: bad magic): not a RunLoopKit
    /// message (bad magic); 7 so far for this reason", or for a line made
    /// after the drops it stands for, "port P: dropped 5 messages (…) since
    /// the last line, the first: …; 12 so far for this reason".
    private func line(_ reason: PortDropReason, count: UInt64, total: UInt64, firstFault: String, atDrop: Bool) -> String {
        let what = count == 1 ? "1 message" : "\(count) messages"
        let since = atDrop ? "" : " since the last line"
        let fault = count == 1 ? ": \(firstFault)" : ", the first: \(firstFault)"
        return "port \(portName): dropped \(what) (\(reason))\(since)\(fault); \(total) so far for this reason"
    }
}
