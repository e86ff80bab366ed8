import Synchronization

/// Where one timer sits in the heaps of the modes it is in: its slot in
/// each (`TimerHeap`), kept in the timer itself, so that a heap finds a
/// member's entry without a lookup. With 100,000 timers, a dictionary from
/// timer to slot cost a change one or two cache misses per heap it asked,
/// in each mode, member or not (docs/performance.md, "Timers in less
/// memory").
///
/// A timer is in one heap (a mode), or two (the common items and the one
/// common mode most loops have); those two are kept inline. The slots of a
/// timer in more heaps than that go to a table for the whole process
/// (`spilled`), and a bit of the second inline slot says that some did:
/// asking a heap the timer is not in reads the two inline slots only, and
/// the timer keeps no array of its own (docs/performance.md, "A timer in
/// 96 bytes"). Changed only under the lock of the loop whose heaps these
/// are: a timer belongs to one loop at a time.
struct TimerHeapSlots {
    /// A heap's identity (above zero, below 2³¹) in bits 32-62, the slot in
    /// the low 32; zero for none. `second`'s bit 63 says whether `spilled`
    /// holds slots of this timer.
    private var first: UInt64 = 0
    private var second: UInt64 = 0

    /// The largest heap number a slot can record.
    static let largestHeap = UInt32(Int32.max)
    private static let spilledBit: UInt64 = 1 << 63
    /// The slots beyond the inline two, by timer: rare (a timer in three
    /// modes or more), and each loop's share changed under its own lock.
    private static let spilled = Mutex<[ObjectIdentifier: [UInt64]]>([:])

    /// Whether the table holds slots of `owner`: for tests, which check
    /// that leaving the heaps, or being freed, takes a timer's slots out.
    package static func hasSpilledSlots(of owner: ObjectIdentifier) -> Bool { spilled.withLock { $0[owner] != nil } }

    /// The slot in the heap `heap` of the timer `owner` (whose slots these
    /// are), or nil if it is not a member.
    @inline(__always)
    func slot(in heap: UInt32, of owner: ObjectIdentifier) -> Int? {
        if Self.heap(of: first) == heap { return Self.slot(of: first) }
        if Self.heap(of: second) == heap { return Self.slot(of: second) }
        guard second & Self.spilledBit != 0 else { return nil }
        return Self.spilled.withLock { $0[owner]?.first { Self.heap(of: $0) == heap } }.map(Self.slot(of:))
    }

    /// Records the slot of `owner` in `heap`, which it has just joined.
    mutating func add(_ slot: Int, in heap: UInt32, of owner: ObjectIdentifier) {
        let packed = UInt64(heap) << 32 | UInt64(UInt32(truncatingIfNeeded: slot))
        if first == 0 {
            first = packed
        } else if second & ~Self.spilledBit == 0 {
            second |= packed
        } else {
            Self.spilled.withLock { $0[owner, default: []].append(packed) }
            second |= Self.spilledBit
        }
    }

    /// Forgets the slot of `owner` in `heap`, which it has just left.
    mutating func remove(in heap: UInt32, of owner: ObjectIdentifier) {
        if Self.heap(of: first) == heap {
            first = 0
        } else if Self.heap(of: second) == heap {
            second &= Self.spilledBit
        } else if second & Self.spilledBit != 0 {
            let emptied = Self.spilled.withLock { table -> Bool in
                guard var slots = table[owner], let index = slots.firstIndex(where: { Self.heap(of: $0) == heap }) else {
                    return false
                }
                slots.remove(at: index)
                table[owner] = slots.isEmpty ? nil : slots
                return slots.isEmpty
            }
            if emptied { second &= ~Self.spilledBit }
        }
    }

    /// Takes the slots of `owner`, being freed, out of the table.
    func forgetSpilled(of owner: ObjectIdentifier) {
        guard second & Self.spilledBit != 0 else { return }
        _ = Self.spilled.withLock { $0.removeValue(forKey: owner) }
    }

    private static func heap(of packed: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: packed >> 32) & largestHeap }
    private static func slot(of packed: UInt64) -> Int { Int(UInt32(truncatingIfNeeded: packed)) }
}
