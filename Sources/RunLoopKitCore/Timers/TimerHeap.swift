/// The timers of one mode, by fire instant: a 4-ary min-heap, so that
/// adding, removing, moving and taking the earliest timer each cost
/// O(log n), whatever the number of timers (as CFRunLoop keeps each mode's
/// timers ordered; docs/performance.md, "Timers"). It lives in the
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
/// among many timers then touches no heap; docs/performance.md,
/// "Timers"). Such an entry is moved when it comes to the top. A
/// timer moved earlier is moved at once (`reschedule`): every entry's
/// instant is at most its timer's, so no timer fires late, and `settle()`
/// makes the top exact before the loop decides how long to sleep.
///
/// Each member keeps its place in the heap itself (`Timer.heapPlaces`), and
/// each entry holds its timer: a change goes from the timer to its entry,
/// and a sift from an entry to its timer, with no array between them.
struct TimerHeap {
    /// An entry: its member's fire instant as the heap knows it, and the
    /// member. Sixteen bytes, four to a cache line: what a sift walks
    /// through. The heap's reference to the member is the entry's, or, for
    /// a member without an entry, its spot in `outside`.
    private struct Entry {
        var instant: UInt64
        let timer: Timer
    }

    /// Which heap this is among its loop's (the loop numbers its modes'
    /// heaps from 1): each member keeps its place in this heap under this
    /// number (`TimerHeapPlaces`).
    let id: UInt32
    /// False for the loop's common items, which only remember which timers
    /// a mode marked common later must take (in joining order) and never
    /// fire from there: they keep members without entries, and a change
    /// of a common-modes timer costs no sift there.
    let ordersByInstant: Bool

    private var entries: [Entry] = []
    /// The members without an entry: those firing (a mode's heap), or all
    /// of them (the common items). A member's place here is `-1 - index`.
    private var outside: [Timer] = []
    private var nextOrder: UInt32

    /// Children per node: a 4-ary heap is half as deep as a binary one, so
    /// a sift swaps (and rewrites members' places) half as often, and a
    /// node's four 16-byte children lie in one or two cache lines.
    private static let arity = 4

    /// A heap numbered `id` (above zero) among its loop's; unordered, a
    /// set of members in joining order (`ordersByInstant`). `firstOrder`
    /// is the first joining order it gives: tests start it near the end
    /// of its range to see the orders renumbered.
    init(id: UInt32 = 1, ordersByInstant: Bool = true, firstOrder: UInt32 = 0) {
        precondition(id > 0 && id <= TimerHeapPlaces.largestHeap, "TimerHeap: heaps are numbered from 1 to 2³⁰ - 1")
        self.id = id
        self.ordersByInstant = ordersByInstant
        nextOrder = firstOrder
    }

    var count: Int { entries.count + outside.count }
    var isEmpty: Bool { entries.isEmpty && outside.isEmpty }

    /// Every member, in the order they joined the mode.
    var timers: [Timer] {
        (entries.map(\.timer) + outside).sorted { order(of: $0) < order(of: $1) }
    }

    func contains(_ timer: Timer) -> Bool { place(of: timer) != nil }

    /// The place of `timer` in this heap (an entry's index, or `-1 - index`
    /// in `outside`), or nil if it is not a member.
    @inline(__always)
    private func place(of timer: Timer) -> Int32? { timer.heapPlaces.place(in: id, of: ObjectIdentifier(timer)) }

    private func order(of timer: Timer) -> UInt32 { timer.heapPlaces.order(in: id, of: ObjectIdentifier(timer)) }

    /// Records `place` as `timer`'s place in the heap numbered `heap`:
    /// static, so that a swap inside the entries' buffer can call it.
    @inline(__always)
    private static func record(_ timer: Timer, at place: Int, in heap: UInt32) {
        timer.heapPlaces.move(in: heap, to: Int32(truncatingIfNeeded: place), of: ObjectIdentifier(timer))
    }

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
        guard place(of: timer) == nil else { return false }
        if nextOrder == .max { renumber() }
        let order = nextOrder
        nextOrder += 1
        if ordersByInstant {
            timer.heapPlaces.add(in: id, unsorted: false, place: Int32(entries.count), order: order, of: ObjectIdentifier(timer))
            push(timer, at: timer.nextFireInstant)
        } else {
            timer.heapPlaces.add(in: id, unsorted: true, place: Self.outsidePlace(outside.count), order: order, of: ObjectIdentifier(timer))
            outside.append(timer)
        }
        return true
    }

    /// Removes `timer`; false if it was not a member.
    mutating func remove(_ timer: Timer) -> Bool {
        guard let place = place(of: timer) else { return false }
        if place >= 0 {
            _ = removeEntry(at: Int(place))
        } else {
            removeOutside(at: Self.outsideIndex(place))
        }
        timer.heapPlaces.remove(in: id, of: ObjectIdentifier(timer))
        return true
    }

    /// Puts a member that was out (it fired, or was due when a stop came)
    /// back at its next instant.
    mutating func reinsert(_ timer: Timer) {
        guard ordersByInstant, let place = place(of: timer), place < 0 else { return }
        removeOutside(at: Self.outsideIndex(place))
        Self.record(timer, at: entries.count, in: id)
        push(timer, at: timer.nextFireInstant)
    }

    /// Moves a member to its timer's instant now: its fire date was set
    /// earlier, or its instant counted again on a test clock.
    mutating func reschedule(_ timer: Timer) {
        guard ordersByInstant, let place = place(of: timer), place >= 0 else { return }
        let position = Int(place)
        entries[position].instant = timer.nextFireInstant
        if !siftUp(position) { siftDown(position) }
    }

    /// Makes the top entry its timer's own fire instant: an entry older
    /// than its timer's goes down to where that instant belongs, until the
    /// top's is exact.
    mutating func settle() {
        while let first = entries.first {
            let actual = first.timer.nextFireInstant
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
            let timer = removeEntry(at: 0)
            Self.record(timer, at: Int(Self.outsidePlace(outside.count)), in: id)
            outside.append(timer)
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
        let firstTimer = first.timer
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
            let timer = entry.timer
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

    /// Appends an entry for `timer`, whose place already names the end,
    /// and sifts it up.
    private mutating func push(_ timer: Timer, at instant: UInt64) {
        entries.append(Entry(instant: instant, timer: timer))
        siftUp(entries.count - 1)
    }

    /// Whether entry `a` comes before entry `b` in heap `id`: earlier, or as
    /// early and joined first (the timers' orders read only then). Static,
    /// for the sifts inside the entries' buffer.
    @inline(__always)
    private static func precedes(_ a: borrowing Entry, _ b: borrowing Entry, in id: UInt32) -> Bool {
        a.instant < b.instant
            || (a.instant == b.instant
                && a.timer.heapPlaces.order(in: id, of: ObjectIdentifier(a.timer))
                    < b.timer.heapPlaces.order(in: id, of: ObjectIdentifier(b.timer)))
    }

    /// Takes out the entry at `position` and returns its timer, whose
    /// recorded place is stale until the caller records another or forgets
    /// it; the last entry fills the gap and is sifted.
    private mutating func removeEntry(at position: Int) -> Timer {
        let last = entries.removeLast()
        guard position < entries.count else { return last.timer }
        let removed = entries[position].timer
        entries[position] = last
        Self.record(last.timer, at: position, in: id)
        if !siftUp(position) { siftDown(position) }
        return removed
    }

    /// Takes out the member at `index` of `outside`; the last fills the gap.
    private mutating func removeOutside(at index: Int) {
        let last = outside.count - 1
        if index != last {
            outside.swapAt(index, last)
            Self.record(outside[index], at: Int(Self.outsidePlace(index)), in: id)
        }
        outside.removeLast()
    }

    private static func outsidePlace(_ index: Int) -> Int32 { Int32(truncatingIfNeeded: -1 - index) }
    private static func outsideIndex(_ place: Int32) -> Int { Int(-1 - place) }

    // The sifts move a hole, not the entry: each entry passed moves one
    // level into the hole and its timer's place is rewritten once; the
    // sifted entry is written once, where it stops. Entries are moved in
    // the buffer, not copied: a copy retains and releases its timer, a
    // cache line of each timer passed among 100,000 (its reference count).

    /// Moves the entry at `position` up while it precedes its parent;
    /// whether it moved (its place recorded then).
    @discardableResult
    private mutating func siftUp(_ position: Int) -> Bool {
        let id = self.id
        return entries.withUnsafeMutableBufferPointer { entries -> Bool in
            let base = entries.baseAddress!
            guard position > 0, Self.precedes(base[position], base[(position - 1) / Self.arity], in: id) else { return false }
            let moving = (base + position).move()
            var hole = position
            repeat {
                let parent = (hole - 1) / Self.arity
                (base + hole).initialize(to: (base + parent).move())
                Self.record(base[hole].timer, at: hole, in: id)
                hole = parent
            } while hole > 0 && Self.precedes(moving, base[(hole - 1) / Self.arity], in: id)
            (base + hole).initialize(to: moving)
            Self.record(base[hole].timer, at: hole, in: id)
            return true
        }
    }

    /// Moves the entry at `position` down while a child precedes it, the
    /// earliest child up each time (its place recorded then).
    private mutating func siftDown(_ position: Int) {
        let id = self.id
        entries.withUnsafeMutableBufferPointer { entries in
            let base = entries.baseAddress!
            let count = entries.count
            /// The earliest child of `parent` if it precedes `entry`.
            func earlierChild(of parent: Int, than entry: borrowing Entry) -> Int? {
                let first = Self.arity * parent + 1
                guard first < count else { return nil }
                var least = first
                var child = first + 1
                let end = min(first + Self.arity, count)
                while child < end {
                    if Self.precedes(base[child], base[least], in: id) { least = child }
                    child += 1
                }
                return Self.precedes(base[least], entry, in: id) ? least : nil
            }
            guard var child = earlierChild(of: position, than: base[position]) else { return }
            let moving = (base + position).move()
            var hole = position
            while true {
                (base + hole).initialize(to: (base + child).move())
                Self.record(base[hole].timer, at: hole, in: id)
                hole = child
                guard let next = earlierChild(of: hole, than: moving) else { break }
                child = next
            }
            (base + hole).initialize(to: moving)
            Self.record(base[hole].timer, at: hole, in: id)
        }
    }

    /// Numbers the joining orders again from 0, keeping their sequence,
    /// when they reach the end of their range (once in four billion joins
    /// to one heap).
    private mutating func renumber() {
        for (order, timer) in timers.enumerated() {
            timer.heapPlaces.renumber(in: id, to: UInt32(order), of: ObjectIdentifier(timer))
        }
        nextOrder = UInt32(count)
    }
}
