/// Where one timer is in each heap of its loop's modes (`TimerHeap`), kept
/// in the timer itself: its place (the index of its entry, or of its spot
/// among the heap's members without an entry) and its joining order. A
/// heap reaches a member's entry from the timer, with nothing between
/// them: among many timers, each array between the two would cost a
/// change a cache miss (docs/performance.md, "Timers").
///
/// A timer is in one heap (a mode), or two (the common items and the one
/// common mode most loops have); those two records are kept inline. The
/// records of a timer in more heaps than that go to a table for the whole
/// process (`spilled`), the common items' first: that heap never sifts,
/// so it asks for its record only when the timer joins or leaves it, where
/// a mode's heap rewrites a member's place at each swap of a sift. A bit
/// of the second inline record says that some went to the table: asking
/// a heap the timer is not in reads the inline two only, and the timer
/// keeps no array of its own (docs/performance.md, "Timers"). Changed
/// only under the lock of the loop whose heaps these
/// are: a timer belongs to one loop at a time.
struct TimerHeapPlaces {
    /// Each inline record: a heap's identity (above zero, below 2³⁰) in
    /// bits 32-61, whether that heap never sifts (`unsortedBit`, bit 62),
    /// the place in the low 32 (an `Int32`); zero for none. `second`'s bit
    /// 63 says whether `spilled` holds records of this timer.
    private var first: UInt64 = 0
    private var second: UInt64 = 0
    /// The joining orders of the two inline records: `first`'s in the low
    /// 32 bits, `second`'s in the high.
    private var orders: UInt64 = 0

    /// The largest heap number a record can hold.
    static let largestHeap = UInt32(1 << 30) - 1
    private static let unsortedBit: UInt64 = 1 << 62
    private static let spilledBit: UInt64 = 1 << 63

    /// A record kept out of line.
    private struct Spilled {
        var packed: UInt64
        var order: UInt32
    }

    /// The records beyond the inline two, by timer: rare (a timer in three
    /// heaps or more), and each loop's share changed under its own lock.
    /// A pthread mutex (`Locked`), which ThreadSanitizer follows, as the
    /// loops of several threads reach it (docs/design.md, "Locks and user code").
    private static let spilled = Locked<[ObjectIdentifier: [Spilled]]>([:])

    /// Whether the table holds records of `owner`: for tests, which check
    /// that leaving the heaps, or being freed, takes a timer's records out.
    package static func hasSpilledRecords(of owner: ObjectIdentifier) -> Bool { spilled.withLock { $0[owner] != nil } }

    /// The place of `owner` in `heap`, or nil if it is not a member.
    @inline(__always)
    func place(in heap: UInt32, of owner: ObjectIdentifier) -> Int32? {
        if Self.heap(of: first) == heap { return Self.place(of: first) }
        if Self.heap(of: second) == heap { return Self.place(of: second) }
        guard second & Self.spilledBit != 0 else { return nil }
        return Self.withSpilled(of: owner, in: heap) { Self.place(of: $0.packed) }
    }

    /// The joining order of `owner` in `heap`, of which it is a member.
    func order(in heap: UInt32, of owner: ObjectIdentifier) -> UInt32 {
        if Self.heap(of: first) == heap { return UInt32(truncatingIfNeeded: orders) }
        if Self.heap(of: second) == heap { return UInt32(truncatingIfNeeded: orders >> 32) }
        guard let order = Self.withSpilled(of: owner, in: heap, { $0.order }) else {
            preconditionFailure("TimerHeapPlaces: the order of a timer in a heap it is not in")
        }
        return order
    }

    /// Records `owner` in `heap`, which it has just joined, at `place` with
    /// joining order `order`; `unsorted` for a heap that never sifts (the
    /// common items), whose record goes out of line first.
    mutating func add(in heap: UInt32, unsorted: Bool, place: Int32, order: UInt32, of owner: ObjectIdentifier) {
        let packed = UInt64(heap) << 32 | (unsorted ? Self.unsortedBit : 0) | UInt64(UInt32(bitPattern: place))
        if first == 0 {
            first = packed
            setOrder(order, high: false)
        } else if second & ~Self.spilledBit == 0 {
            second |= packed
            setOrder(order, high: true)
        } else if !unsorted && first & Self.unsortedBit != 0 {
            // The unsorted heap's record makes room inline for one that sifts.
            spill(Spilled(packed: first, order: UInt32(truncatingIfNeeded: orders)), of: owner)
            first = packed
            setOrder(order, high: false)
        } else if !unsorted && second & Self.unsortedBit != 0 {
            spill(Spilled(packed: second & ~Self.spilledBit, order: UInt32(truncatingIfNeeded: orders >> 32)), of: owner)
            second = packed | Self.spilledBit
            setOrder(order, high: true)
        } else {
            spill(Spilled(packed: packed, order: order), of: owner)
        }
    }

    /// Moves the record of `owner` in `heap` to `place`: at every swap of a
    /// sift, so the inline records come first and cheaply.
    @inline(__always)
    mutating func move(in heap: UInt32, to place: Int32, of owner: ObjectIdentifier) {
        let placeBits = UInt64(UInt32(bitPattern: place))
        if Self.heap(of: first) == heap {
            first = first & ~0xFFFF_FFFF | placeBits
        } else if Self.heap(of: second) == heap {
            second = second & ~0xFFFF_FFFF | placeBits
        } else if Self.withSpilled(of: owner, in: heap, { $0.packed = $0.packed & ~0xFFFF_FFFF | placeBits }) == nil {
            preconditionFailure("TimerHeapPlaces: a timer moved in a heap it is not in")
        }
    }

    /// Sets the joining order of `owner` in `heap` (its orders numbered again).
    mutating func renumber(in heap: UInt32, to order: UInt32, of owner: ObjectIdentifier) {
        if Self.heap(of: first) == heap {
            setOrder(order, high: false)
        } else if Self.heap(of: second) == heap {
            setOrder(order, high: true)
        } else {
            _ = Self.withSpilled(of: owner, in: heap) { $0.order = order }
        }
    }

    /// Forgets the record of `owner` in `heap`, which it has just left.
    mutating func remove(in heap: UInt32, of owner: ObjectIdentifier) {
        if Self.heap(of: first) == heap {
            first = 0
        } else if Self.heap(of: second) == heap {
            second &= Self.spilledBit
        } else if second & Self.spilledBit != 0 {
            let emptied = Self.spilled.withLock { table -> Bool in
                guard var records = table[owner], let index = records.firstIndex(where: { Self.heap(of: $0.packed) == heap }) else {
                    return false
                }
                records.remove(at: index)
                table[owner] = records.isEmpty ? nil : records
                return records.isEmpty
            }
            if emptied { second &= ~Self.spilledBit }
        }
    }

    /// Runs `body` on the record of `owner` in `heap` kept in the table,
    /// under the table's lock; nil if the table holds none.
    private static func withSpilled<T>(of owner: ObjectIdentifier, in heap: UInt32, _ body: (inout Spilled) -> T) -> T? {
        spilled.withLock { table in
            guard let index = table[owner]?.firstIndex(where: { Self.heap(of: $0.packed) == heap }) else { return nil }
            return body(&table[owner]![index])
        }
    }

    /// Takes the records of `owner`, being freed, out of the table.
    func forgetSpilled(of owner: ObjectIdentifier) {
        guard second & Self.spilledBit != 0 else { return }
        _ = Self.spilled.withLock { $0.removeValue(forKey: owner) }
    }

    private mutating func setOrder(_ order: UInt32, high: Bool) {
        orders = high
            ? orders & 0xFFFF_FFFF | UInt64(order) << 32
            : orders & ~0xFFFF_FFFF | UInt64(order)
    }

    private mutating func spill(_ record: Spilled, of owner: ObjectIdentifier) {
        Self.spilled.withLock { $0[owner, default: []].append(record) }
        second |= Self.spilledBit
    }

    private static func heap(of packed: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: packed >> 32) & largestHeap }
    private static func place(of packed: UInt64) -> Int32 { Int32(bitPattern: UInt32(truncatingIfNeeded: packed)) }
}
