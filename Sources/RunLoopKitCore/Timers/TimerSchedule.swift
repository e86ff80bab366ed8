/// The timers of the mode being run, sorted by fire instant (as CFRunLoop
/// keeps each mode's timers sorted), so that a pass finds its due timers and
/// the next wake-up without looking at every timer: with a thousand timers,
/// scanning them all on each fire added tens of microseconds of lateness.
///
/// Each entry keeps the instant it was sorted under. A timer's instant only
/// changes on the loop's thread when it fires (it moves later), or through
/// `fireDate` / `tolerance`, which bump the loop's item version and so
/// rebuild the schedule; an entry whose instant no longer matches its timer
/// (moved by a nested run) is simply re-sorted when it comes up. Loop thread
/// only, inside `ModeSnapshot`.
struct TimerSchedule {
    private struct Entry {
        let instant: UInt64
        let timer: Timer
    }

    // Ascending by instant; equal instants keep insertion order.
    private var entries: [Entry] = []

    /// The earliest fire instant, or `MonotonicClock.never`.
    var earliest: UInt64 { entries.first?.instant ?? MonotonicClock.never }

    /// Sorts `timers` afresh (after the mode's items changed): one sort,
    /// not an insertion each, so that a thousand timers cost O(n log n).
    mutating func rebuild(_ timers: [Timer]) {
        entries.removeAll(keepingCapacity: true)
        var keyed: [(instant: UInt64, order: Int, timer: Timer)] = []
        keyed.reserveCapacity(timers.count)
        for (order, timer) in timers.enumerated() where timer.isSchedulable {
            let instant = timer.nextFireInstant
            if instant != MonotonicClock.never { keyed.append((instant, order, timer)) }
        }
        // Equal instants keep the mode's order, as `insert` does.
        keyed.sort { ($0.instant, $0.order) < ($1.instant, $1.order) }
        entries.append(contentsOf: keyed.lazy.map { Entry(instant: $0.instant, timer: $0.timer) })
    }

    /// Adds `timer` at its current fire instant, unless it is invalid or will never fire.
    mutating func insert(_ timer: Timer) {
        guard timer.isSchedulable else { return }
        let instant = timer.nextFireInstant
        guard instant != MonotonicClock.never else { return }
        entries.insert(Entry(instant: instant, timer: timer), at: insertionIndex(for: instant))
    }

    /// Moves the timers due at `now` into `due`, earliest first; they leave
    /// the schedule until `insert` puts them back after firing.
    mutating func takeDue(now: UInt64, into due: inout [Timer]) {
        var taken = 0
        var resorted: [Timer] = []
        while taken < entries.count, entries[taken].instant <= now {
            let entry = entries[taken]
            taken += 1
            // A timer firing further up the stack (this is a nested run,
            // S-RUN-8) leaves this schedule; the run that fires it puts it back.
            guard entry.timer.isSchedulable else { continue }
            if entry.timer.nextFireInstant == entry.instant {
                due.append(entry.timer)
            } else {
                resorted.append(entry.timer)  // moved since it was sorted
            }
        }
        entries.removeSubrange(0..<taken)
        for timer in resorted {
            if timer.nextFireInstant <= now {
                // Moved, and due all the same: into the due list in instant order.
                let instant = timer.nextFireInstant
                due.insert(timer, at: due.firstIndex { $0.nextFireInstant > instant } ?? due.endIndex)
            } else {
                insert(timer)
            }
        }
    }

    /// When the loop must wake for its timers: the latest fire instant that
    /// is still within every timer's tolerance window, so that timers whose
    /// windows overlap fire in one wake-up (S-TMR-3), and a timer with
    /// nothing to share a wake-up with fires at its fire date, never later
    /// than it must. Only timers that fire before the earliest window closes
    /// can matter, and those are at the front.
    func wakeInstant() -> UInt64 {
        var deadline = MonotonicClock.never
        var wake = MonotonicClock.never
        for entry in entries where entry.timer.isSchedulable {
            if entry.instant > deadline { break }
            deadline = min(deadline, entry.timer.latestWakeInstant)
            if entry.instant <= deadline { wake = entry.instant }
        }
        return wake
    }

    /// After the last entry with an instant at or before `instant`.
    private func insertionIndex(for instant: UInt64) -> Int {
        var low = 0
        var high = entries.count
        while low < high {
            let middle = (low + high) / 2
            if entries[middle].instant <= instant { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
