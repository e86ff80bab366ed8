/// Where one timer sits in the heaps of the modes it is in: its slot in
/// each (`TimerHeap`), kept in the timer itself, so that a heap finds a
/// member's entry without a lookup. With 100,000 timers, a dictionary from
/// timer to slot cost a change one or two cache misses per heap it asked,
/// in each mode, member or not (docs/performance.md, "Timers in less
/// memory").
///
/// A timer is in one heap (a mode), or two (the common items and the one
/// common mode most loops have); those two are kept inline, further ones in
/// an array. Changed only under the lock of the loop whose heaps these are:
/// a timer belongs to one loop at a time.
struct TimerHeapSlots {
    /// A heap's identity (above zero) in the high 32 bits, the slot in the
    /// low 32; zero for none.
    private var first: UInt64 = 0
    private var second: UInt64 = 0
    private var more: [UInt64] = []

    /// The timer's slot in the heap `heap`, or nil if it is not a member.
    @inline(__always)
    func slot(in heap: UInt32) -> Int? {
        if Self.heap(of: first) == heap { return Self.slot(of: first) }
        if Self.heap(of: second) == heap { return Self.slot(of: second) }
        guard !more.isEmpty else { return nil }
        return more.first { Self.heap(of: $0) == heap }.map(Self.slot(of:))
    }

    /// Records the timer's slot in `heap`, which it has just joined.
    mutating func add(_ slot: Int, in heap: UInt32) {
        let packed = UInt64(heap) << 32 | UInt64(UInt32(truncatingIfNeeded: slot))
        if first == 0 {
            first = packed
        } else if second == 0 {
            second = packed
        } else {
            more.append(packed)
        }
    }

    /// Forgets the timer's slot in `heap`, which it has just left.
    mutating func remove(in heap: UInt32) {
        if Self.heap(of: first) == heap {
            first = 0
        } else if Self.heap(of: second) == heap {
            second = 0
        } else if let index = more.firstIndex(where: { Self.heap(of: $0) == heap }) {
            more.remove(at: index)
        }
    }

    private static func heap(of packed: UInt64) -> UInt32 { UInt32(truncatingIfNeeded: packed >> 32) }
    private static func slot(of packed: UInt64) -> Int { Int(UInt32(truncatingIfNeeded: packed)) }
}
