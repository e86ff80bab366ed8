import RunLoopKit

/// Puts events back in time order (S-TAP-1's readers see each process's
/// events in the order of their numbers, but threads stamp their events
/// before they queue them, and processes' events interleave as they
/// arrive). Each event waits `window` nanoseconds after it arrived; then the
/// events due leave earliest first. One that comes later than its window
/// (its time is before the last one shown) is shown at once, marked late
/// and counted, never dropped.
struct ReorderBuffer {
    /// How long an event waits for earlier ones, in nanoseconds (0: none).
    let window: Int64
    /// Waiting events, by time (then by arrival).
    private var waiting: [(arrival: Int64, event: PortTapEvent)] = []
    /// The time of the last event let out.
    private var lastTime = Int64.min
    /// Events that came later than their window.
    private(set) var lateCount = 0

    init(windowMilliseconds: Int) { window = Int64(windowMilliseconds) * 1_000_000 }

    /// An event arrived at `now` (monotonic nanoseconds).
    mutating func add(_ event: PortTapEvent, now: Int64) {
        // After every waiting event of the same time or earlier: a binary search.
        var low = 0
        var high = waiting.count
        while low < high {
            let middle = (low + high) / 2
            if waiting[middle].event.monotonicTime <= event.monotonicTime { low = middle + 1 } else { high = middle }
        }
        waiting.insert((now, event), at: low)
    }

    /// The events due at `now` (every one with `all`), in time order, each
    /// with whether it came too late to be in order.
    mutating func release(now: Int64, all: Bool = false) -> [(event: PortTapEvent, late: Bool)] {
        var due: [(event: PortTapEvent, late: Bool)] = []
        var count = 0
        while count < waiting.count, all || waiting[count].arrival + window <= now { count += 1 }
        for (_, event) in waiting.prefix(count) {
            let late = event.monotonicTime < lastTime
            if late { lateCount += 1 } else { lastTime = event.monotonicTime }
            due.append((event, late))
        }
        waiting.removeFirst(count)
        return due
    }

    /// When the first waiting event is due (monotonic nanoseconds), if any waits.
    var nextDue: Int64? { waiting.first.map { $0.arrival + window } }

    var isEmpty: Bool { waiting.isEmpty }
}
