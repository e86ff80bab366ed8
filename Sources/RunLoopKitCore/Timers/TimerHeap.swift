/// The timers of one mode, by fire instant: a binary min-heap, so that
/// adding, removing, moving and taking the earliest timer each cost
/// O(log n), whatever the number of timers (as CFRunLoop keeps each mode's
/// timers ordered; docs/performance.md, "Timers at scale"). It lives in the
/// mode's state, under the loop's lock.
///
/// Each member has one entry in the heap, keyed by its fire instant and,
/// among equal instants, by when it joined the mode (the mode's order).
/// A member is out of the heap while it fires: the run that fires it puts
/// it back (`reinsert`), in every mode it is in, at its next instant. An
/// entry whose instant is older than its timer's (the timer fired in
/// another mode, or moved later) is fixed when it comes up; a timer moved
/// earlier is moved at once (`reschedule`), so that none fires late.
struct TimerHeap {
    private struct Entry {
        var instant: UInt64
        let order: UInt64
        /// Its member's slot (see `positions`).
        let slot: Int
        let timer: Timer

        func precedes(_ other: Entry) -> Bool {
            instant < other.instant || (instant == other.instant && order < other.order)
        }
    }

    // Each member has a slot, an index into the three arrays below, found
    // by timer once per change (`members`). Its entry's position is
    // rewritten at every swap of a sift: in an array of 4-byte positions,
    // which for 100,000 timers stays in the cache, where a dictionary
    // written twice a swap made a change cost microseconds
    // (docs/performance.md, "A timer change, profiled and made cheaper").
    private var entries: [Entry] = []
    private var members: [ObjectIdentifier: Int] = [:]
    /// Each slot's entry's index in `entries`, or `TimerHeap.out` while
    /// the member is out of the heap (firing) or the slot is free.
    private var positions: [Int32] = []
    /// Each slot's timer, nil while the slot is free.
    private var slotTimers: [Timer?] = []
    /// Each slot's joining order.
    private var slotOrders: [UInt64] = []
    /// Slots of removed members, used again before the arrays grow.
    private var freeSlots: [Int] = []
    private var nextOrder: UInt64 = 0

    private static let out: Int32 = -1

    var isEmpty: Bool { members.isEmpty }
    var count: Int { members.count }

    /// Every member, in the order they joined the mode.
    var timers: [Timer] {
        members.values.sorted { slotOrders[$0] < slotOrders[$1] }.compactMap { slotTimers[$0] }
    }

    func contains(_ timer: Timer) -> Bool { members[ObjectIdentifier(timer)] != nil }

    /// The earliest instant in the heap (possibly older than its timer's:
    /// waking for it then fires nothing), or `MonotonicClock.never`.
    var earliest: UInt64 { entries.first?.instant ?? MonotonicClock.never }

    /// Adds `timer` at its fire instant; false if it is a member already.
    mutating func insert(_ timer: Timer) -> Bool {
        let key = ObjectIdentifier(timer)
        guard members[key] == nil else { return false }
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slotTimers[slot] = timer
            slotOrders[slot] = nextOrder
        } else {
            slot = positions.count
            positions.append(Self.out)
            slotTimers.append(timer)
            slotOrders.append(nextOrder)
        }
        nextOrder += 1
        members[key] = slot
        push(slot)
        return true
    }

    /// Removes `timer`; false if it was not a member.
    mutating func remove(_ timer: Timer) -> Bool {
        guard let slot = members.removeValue(forKey: ObjectIdentifier(timer)) else { return false }
        if positions[slot] != Self.out { removeEntry(at: Int(positions[slot])) }
        slotTimers[slot] = nil
        freeSlots.append(slot)
        return true
    }

    /// Puts a member that was out (it fired, or was due when a stop came)
    /// back at its next instant.
    mutating func reinsert(_ timer: Timer) {
        guard let slot = members[ObjectIdentifier(timer)], positions[slot] == Self.out else { return }
        push(slot)
    }

    /// Moves a member to its timer's instant now (its fire date was set).
    mutating func reschedule(_ timer: Timer) {
        guard let slot = members[ObjectIdentifier(timer)], positions[slot] != Self.out else { return }
        let position = Int(positions[slot])
        entries[position].instant = timer.nextFireInstant
        if !siftUp(position) { siftDown(position) }
    }

    /// Takes the timers due at `now` out of the heap into `due`, earliest
    /// first. A timer that cannot fire now (firing further up the stack,
    /// S-RUN-8, or invalid) stays out until the run firing it puts it back;
    /// an entry older than its timer goes back at the timer's instant.
    mutating func takeDue(now: UInt64, into due: inout [Timer]) {
        while let first = entries.first, first.instant <= now {
            let timer = first.timer
            let actual = timer.nextFireInstant
            if actual != first.instant && actual > now {
                entries[0].instant = actual
                siftDown(0)
                continue
            }
            removeEntry(at: 0)
            if timer.isSchedulable { due.append(timer) }
        }
    }

    /// When the loop must wake for these timers: the latest instant still
    /// within every timer's tolerance window, so that timers whose windows
    /// overlap fire in one wake-up (S-TMR-3). Looks only at the entries that
    /// come before the earliest window closes: a subtree whose root is later
    /// than that holds none.
    func wakeInstant() -> UInt64 {
        guard let first = entries.first else { return MonotonicClock.never }
        // The usual case, no tolerance on the earliest timer: its instant.
        if first.timer.isSchedulable && first.instant == first.timer.nextFireInstant
            && first.timer.latestWakeInstant == first.instant {
            return first.instant
        }
        var deadline = MonotonicClock.never
        var stack = [0]
        var considered: [UInt64] = []
        while let index = stack.popLast() {
            let entry = entries[index]
            guard entry.instant <= deadline else { continue }
            if entry.timer.isSchedulable {
                let instant = max(entry.instant, entry.timer.nextFireInstant)
                if instant <= deadline {
                    considered.append(instant)
                    deadline = min(deadline, entry.timer.latestWakeInstant)
                }
            }
            for child in [2 * index + 1, 2 * index + 2] where child < entries.count { stack.append(child) }
        }
        return considered.filter { $0 <= deadline }.max() ?? MonotonicClock.never
    }

    // MARK: - The heap

    private mutating func push(_ slot: Int) {
        guard let timer = slotTimers[slot] else { return }
        entries.append(Entry(instant: timer.nextFireInstant, order: slotOrders[slot], slot: slot, timer: timer))
        positions[slot] = Int32(entries.count - 1)
        siftUp(entries.count - 1)
    }

    private mutating func removeEntry(at position: Int) {
        let removed = entries[position].slot
        let last = entries.count - 1
        if position != last {
            entries.swapAt(position, last)
            positions[entries[position].slot] = Int32(position)
        }
        entries.removeLast()
        positions[removed] = Self.out
        if position < entries.count, !siftUp(position) { siftDown(position) }
    }

    /// Moves the entry at `position` up while it precedes its parent;
    /// whether it moved.
    @discardableResult
    private mutating func siftUp(_ position: Int) -> Bool {
        var child = position
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { break }
            swapEntries(child, parent)
            child = parent
        }
        return child != position
    }

    private mutating func siftDown(_ position: Int) {
        var parent = position
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            let right = left + 1
            let first = right < entries.count && entries[right].precedes(entries[left]) ? right : left
            guard entries[first].precedes(entries[parent]) else { return }
            swapEntries(parent, first)
            parent = first
        }
    }

    private mutating func swapEntries(_ a: Int, _ b: Int) {
        entries.swapAt(a, b)
        positions[entries[a].slot] = Int32(a)
        positions[entries[b].slot] = Int32(b)
    }
}
