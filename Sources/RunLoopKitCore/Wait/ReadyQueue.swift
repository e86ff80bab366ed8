/// The loop's ready list: socket sources that may have input, in arrival
/// order, so that step 6 of S-RUN-2 is answered without a system call.
///
/// A queue with O(1) removal at the front, because the loop takes its head
/// once per socket event and puts the source back at the end: with thousands
/// of ready ports a plain array's `remove(at: 0)` would make every message
/// pay for every waiting port. Its slots are reused in place: emptying the
/// queue resets two indices and touches no array storage (emptying an
/// array would be a generic replaceSubrange on every message of a round
/// trip). Entries behind the head are removed in place (rare: sources of
/// another mode, or gone from the loop). Loop thread only.
struct ReadyQueue {
    struct Entry {
        // nil once taken from the front, or in a slot past the tail.
        var source: SocketSource?
        /// Input was seen (ZMQ_EVENTS, a read-ahead) since the source was last handled.
        var confirmed: Bool
    }

    private var storage: [Entry] = []
    /// The front entry's slot.
    private var head = 0
    /// One past the last entry's slot; slots from here on are free.
    private var tail = 0

    var count: Int { tail - head }
    var isEmpty: Bool { head == tail }

    /// The source at `index` (0 is the front).
    func source(at index: Int) -> SocketSource {
        // Every slot from `head` to `tail` holds a source.
        storage[head + index].source.unsafelyUnwrapped
    }

    func isConfirmed(at index: Int) -> Bool { storage[head + index].confirmed }

    mutating func confirm(at index: Int) { storage[head + index].confirmed = true }

    mutating func unconfirm(at index: Int) { storage[head + index].confirmed = false }

    /// Whether the entry at `index` is `source`: no retain of it.
    func holds(_ source: SocketSource, at index: Int) -> Bool { storage[head + index].source === source }

    mutating func append(_ source: SocketSource, confirmed: Bool) {
        let entry = Entry(source: source, confirmed: confirmed)
        if tail < storage.count {
            storage[tail] = entry
        } else {
            storage.append(entry)
        }
        tail += 1
    }

    /// Removes the entry at `index` and returns its source.
    @discardableResult
    mutating func remove(at index: Int) -> SocketSource {
        let slot = head + index
        // Moved out of its slot, not copied and cleared: no retain and release.
        let source = storage[slot].source.take().unsafelyUnwrapped
        if index == 0 {
            head += 1
        } else {
            // Rare: close the gap, so that the entries stay in order.
            storage.remove(at: slot)
            storage.append(Entry(source: nil, confirmed: false))
            tail -= 1
        }
        if head == tail {
            head = 0
            tail = 0
        } else if head >= 64 && head * 2 >= tail {
            // Amortised: each entry is moved at most once per time it is queued.
            for offset in 0..<(tail - head) {
                storage[offset] = storage[head + offset]
                storage[head + offset].source = nil
            }
            tail -= head
            head = 0
        }
        return source
    }
}
