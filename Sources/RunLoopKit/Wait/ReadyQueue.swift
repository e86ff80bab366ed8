/// The loop's ready list: socket sources that may have input, in arrival
/// order, so that step 6 of S-RUN-2 is answered without a system call.
///
/// A queue with O(1) removal at the front, because the loop takes its head
/// once per socket event and puts the source back at the end: with thousands
/// of ready ports a plain array's `remove(at: 0)` made every message pay for
/// every waiting port. Entries behind the head are removed in place (rare:
/// sources of another mode, or gone from the loop). Loop thread only.
struct ReadyQueue {
    struct Entry {
        // nil once taken from the front, until the storage is compacted.
        var source: SocketSource?
        /// Input was seen (ZMQ_EVENTS, a read-ahead) since the source was last handled.
        var confirmed: Bool
    }

    private var storage: [Entry] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }

    /// The source at `index` (0 is the front).
    func source(at index: Int) -> SocketSource {
        // Every entry from `head` on holds a source.
        storage[head + index].source.unsafelyUnwrapped
    }

    func isConfirmed(at index: Int) -> Bool { storage[head + index].confirmed }

    mutating func confirm(at index: Int) { storage[head + index].confirmed = true }

    mutating func append(_ source: SocketSource, confirmed: Bool) {
        storage.append(Entry(source: source, confirmed: confirmed))
    }

    /// Removes the entry at `index` and returns its source.
    @discardableResult
    mutating func remove(at index: Int) -> SocketSource {
        guard index == 0 else { return storage.remove(at: head + index).source.unsafelyUnwrapped }
        let source = storage[head].source.unsafelyUnwrapped
        storage[head].source = nil
        head += 1
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 64 && head * 2 >= storage.count {
            // Amortised: each entry is moved at most once per time it is queued.
            storage.removeSubrange(0..<head)
            head = 0
        }
        return source
    }
}
