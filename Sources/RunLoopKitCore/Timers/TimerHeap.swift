/// The timers of one mode, by fire instant: a 4-ary min-heap, so that
/// adding, removing, moving and taking the earliest timer each cost
/// O(log n), whatever the number of timers (as CFRunLoop keeps each mode's
/// timers ordered; docs/performance.md, "Timers at scale"). It lives in the
/// mode's state, under the loop's lock.
///
/// Each member has one entry in the heap, keyed by its fire instant and,
/// among equal instants, by when it joined the mode (the mode's order).
/// A member is out of the heap while it fires: the run that fires it puts
/// it back (`reinsert`), in every mode it is in, at its next instant.
///
/// An entry may be older than its timer's instant: the timer fired in
/// another mode, or was moved later (`Timer.fireDate`'s setter then leaves
/// the heaps alone, as Go's runtime leaves a timer moved later: a change
/// among many timers then touches no heap; docs/performance.md, "Timers
/// moved later"). Such an entry is moved when it comes to the top. A
/// timer moved earlier is moved at once (`reschedule`): every entry's
/// instant is at most its timer's, so no timer fires late, and `settle()`
/// makes the top exact before the loop decides how long to sleep.
struct TimerHeap {
    /// An entry: its member's fire instant as the heap knows it, the
    /// member's slot, and its joining order, so that comparing two entries
    /// reads nothing else. Sixteen bytes, four to a cache line: what a sift
    /// walks through (docs/performance.md, "Timers in less memory").
    private struct Entry {
        var instant: UInt64
        let slot: Int32
        var order: UInt32
    }

    /// Which heap this is among its loop's (the loop numbers its modes'
    /// heaps from 1): each member keeps its slot in this heap under this
    /// number (`TimerHeapSlots`).
    let id: UInt32
    /// False for the loop's common items, which only remember which timers
    /// a mode marked common later must take (in joining order) and never
    /// fire from there: they keep members without entries, and a change
    /// of a common-modes timer costs no sift there.
    let ordersByInstant: Bool

    /// What the heap keeps about one member, at its slot (an index the
    /// timer itself keeps, `Timer.heapSlots`): its timer, its joining
    /// order (among equal instants, the earlier joined comes first) and its
    /// entry's index in `entries`, rewritten at every swap of a sift, or
    /// `TimerHeap.out` while it has no entry (it is firing, or the slot is
    /// free). Sixteen bytes: a change that reaches a member finds all three
    /// in one place (docs/performance.md, "Timers in less memory").
    private struct Slot {
        var timer: Timer?
        var order: UInt32
        var position: Int32
    }

    private var entries: [Entry] = []
    private var slots: [Slot] = []
    /// Slots of removed members, used again before `slots` grows.
    private var freeSlots: [Int] = []
    private var nextOrder: UInt32
    private(set) var count = 0

    private static let out: Int32 = -1
    /// Children per node: a 4-ary heap is half as deep as a binary one, so
    /// a sift swaps (and rewrites members' positions) half as often, and a
    /// node's four 16-byte children lie in one or two cache lines.
    private static let arity = 4

    /// A heap numbered `id` (above zero) among its loop's; unordered, a
    /// set of members in joining order (`ordersByInstant`). `firstOrder`
    /// is the first joining order it gives: tests start it near the end
    /// of its range to see the orders renumbered.
    init(id: UInt32 = 1, ordersByInstant: Bool = true, firstOrder: UInt32 = 0) {
        precondition(id > 0 && id <= TimerHeapSlots.largestHeap, "TimerHeap: heaps are numbered from 1 to 2³¹ - 1")
        self.id = id
        self.ordersByInstant = ordersByInstant
        nextOrder = firstOrder
    }

    var isEmpty: Bool { count == 0 }

    /// Every member, in the order they joined the mode.
    var timers: [Timer] {
        slots.filter { $0.timer != nil }.sorted { $0.order < $1.order }.map { $0.timer! }
    }

    func contains(_ timer: Timer) -> Bool { slot(of: timer) != nil }

    /// The slot of `timer` in this heap, or nil if it is not a member.
    private func slot(of timer: Timer) -> Int? { timer.heapSlots.slot(in: id, of: ObjectIdentifier(timer)) }

    /// The earliest instant in the heap, or `MonotonicClock.never`: a
    /// bound, possibly older than its timer's (waking for it then fires
    /// nothing); `settledEarliest()` is exact.
    var earliest: UInt64 { entries.first?.instant ?? MonotonicClock.never }

    /// The earliest fire instant of a member (`settle()`, then `earliest`).
    mutating func settledEarliest() -> UInt64 {
        settle()
        return earliest
    }

    /// Adds `timer` at its fire instant; false if it is a member already.
    mutating func insert(_ timer: Timer) -> Bool {
        guard slot(of: timer) == nil else { return false }
        if nextOrder == .max { renumber() }
        let joined = Slot(timer: timer, order: nextOrder, position: Self.out)
        nextOrder += 1
        let slot: Int
        if let free = freeSlots.popLast() {
            slot = free
            slots[slot] = joined
        } else {
            slot = slots.count
            slots.append(joined)
        }
        count += 1
        timer.heapSlots.add(slot, in: id, of: ObjectIdentifier(timer))
        if ordersByInstant { push(slot, at: timer.nextFireInstant) }
        return true
    }

    /// Removes `timer`; false if it was not a member.
    mutating func remove(_ timer: Timer) -> Bool {
        guard let slot = slot(of: timer) else { return false }
        timer.heapSlots.remove(in: id, of: ObjectIdentifier(timer))
        if ordersByInstant && slots[slot].position != Self.out { removeEntry(at: Int(slots[slot].position)) }
        slots[slot].timer = nil
        freeSlots.append(slot)
        count -= 1
        return true
    }

    /// Puts a member that was out (it fired, or was due when a stop came)
    /// back at its next instant.
    mutating func reinsert(_ timer: Timer) {
        guard ordersByInstant, let slot = slot(of: timer), slots[slot].position == Self.out else { return }
        push(slot, at: timer.nextFireInstant)
    }

    /// Moves a member to its timer's instant now: its fire date was set
    /// earlier, or its instant counted again on a test clock.
    mutating func reschedule(_ timer: Timer) {
        guard ordersByInstant, let slot = slot(of: timer), slots[slot].position != Self.out else { return }
        let position = Int(slots[slot].position)
        entries[position].instant = timer.nextFireInstant
        if !siftUp(position) { siftDown(position) }
    }

    /// Makes the top entry its timer's own fire instant: an entry older
    /// than its timer's goes down to where that instant belongs, until the
    /// top's is exact.
    mutating func settle() {
        while let first = entries.first {
            let actual = slots[Int(first.slot)].timer!.nextFireInstant
            guard actual > first.instant else { return }
            entries[0].instant = actual
            siftDown(0)
        }
    }

    /// Takes the timers due at `now` out of the heap into `due`, earliest
    /// first. A timer that cannot fire now (firing further up the stack,
    /// S-RUN-8, or invalid) stays out until the run firing it puts it back;
    /// an entry older than its timer goes back at the timer's instant
    /// (taken then if that is due too).
    mutating func takeDue(now: UInt64, into due: inout [Timer]) {
        // Settled, the top is a timer's own instant (taken then if that is
        // due too), so that timers come out in fire order.
        while true {
            settle()
            guard let first = entries.first, first.instant <= now else { return }
            let timer = slots[Int(first.slot)].timer!
            removeEntry(at: 0)
            if timer.isSchedulable { due.append(timer) }
        }
    }

    /// When the loop must wake for these timers: the latest instant still
    /// within every timer's tolerance window, so that timers whose windows
    /// overlap fire in one wake-up (S-TMR-3). Settles the top first, then
    /// looks only at the entries that come before the earliest window
    /// closes: a subtree whose root is later than that holds none.
    mutating func wakeInstant() -> UInt64 {
        settle()
        guard let first = entries.first else { return MonotonicClock.never }
        // The usual case, no tolerance on the earliest timer: its instant.
        let firstTimer = slots[Int(first.slot)].timer!
        if firstTimer.isSchedulable && first.instant == firstTimer.nextFireInstant
            && firstTimer.latestWakeInstant == first.instant {
            return first.instant
        }
        var deadline = MonotonicClock.never
        var stack = [0]
        var considered: [UInt64] = []
        while let index = stack.popLast() {
            let entry = entries[index]
            guard entry.instant <= deadline else { continue }
            let timer = slots[Int(entry.slot)].timer!
            if timer.isSchedulable {
                let instant = max(entry.instant, timer.nextFireInstant)
                if instant <= deadline {
                    considered.append(instant)
                    deadline = min(deadline, timer.latestWakeInstant)
                }
            }
            let firstChild = Self.arity * index + 1
            for child in firstChild..<max(firstChild, min(firstChild + Self.arity, entries.count)) { stack.append(child) }
        }
        return considered.filter { $0 <= deadline }.max() ?? MonotonicClock.never
    }

    // MARK: - The heap

    private mutating func push(_ slot: Int, at instant: UInt64) {
        entries.append(Entry(instant: instant, slot: Int32(truncatingIfNeeded: slot), order: slots[slot].order))
        slots[slot].position = Int32(entries.count - 1)
        siftUp(entries.count - 1)
    }

    /// Whether entry `a` comes before entry `b`: earlier, or as early and
    /// joined first.
    @inline(__always)
    private static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.instant < b.instant || (a.instant == b.instant && a.order < b.order)
    }

    private mutating func removeEntry(at position: Int) {
        let removed = Int(entries[position].slot)
        let last = entries.count - 1
        if position != last {
            entries.swapAt(position, last)
            slots[Int(entries[position].slot)].position = Int32(position)
        }
        entries.removeLast()
        slots[removed].position = Self.out
        if position < entries.count, !siftUp(position) { siftDown(position) }
    }

    /// Moves the entry at `position` up while it precedes its parent;
    /// whether it moved.
    @discardableResult
    private mutating func siftUp(_ position: Int) -> Bool {
        var child = position
        while child > 0 {
            let parent = (child - 1) / Self.arity
            guard Self.precedes(entries[child], entries[parent]) else { break }
            swapEntries(child, parent)
            child = parent
        }
        return child != position
    }

    private mutating func siftDown(_ position: Int) {
        var parent = position
        while true {
            let firstChild = Self.arity * parent + 1
            guard firstChild < entries.count else { return }
            var least = firstChild
            for child in firstChild + 1..<min(firstChild + Self.arity, entries.count)
            where Self.precedes(entries[child], entries[least]) {
                least = child
            }
            guard Self.precedes(entries[least], entries[parent]) else { return }
            swapEntries(parent, least)
            parent = least
        }
    }

    private mutating func swapEntries(_ a: Int, _ b: Int) {
        entries.swapAt(a, b)
        slots[Int(entries[a].slot)].position = Int32(a)
        slots[Int(entries[b].slot)].position = Int32(b)
    }

    /// Numbers the joining orders again from 0, keeping their sequence,
    /// when they reach the end of their range (once in four billion joins
    /// to one heap).
    private mutating func renumber() {
        let inUse = slots.indices
            .filter { slots[$0].timer != nil }
            .sorted { slots[$0].order < slots[$1].order }
        for (order, slot) in inUse.enumerated() { slots[slot].order = UInt32(order) }
        for index in entries.indices { entries[index].order = slots[Int(entries[index].slot)].order }
        nextOrder = UInt32(inUse.count)
    }
}
