/// FIFO of pending blocks (S-BLK-4). Guarded by the loop's lock. Popping from
/// the head and appending reuse the same storage, so a steady stream of
/// performs allocates nothing here.
struct BlockQueue {
    private var storage: [PendingBlock?] = []
    private var head = 0

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }

    mutating func append(_ block: PendingBlock) { storage.append(block) }

    /// Takes the first block, among the first `limit`, that may run in `mode`.
    /// Blocks queued after a drain began sit behind its `limit`, so that they
    /// wait for the next pass, as CFRunLoop's do.
    mutating func popFirst(matching mode: RunLoop.Mode, isCommon: Bool, limit: Int) -> PendingBlock? {
        var index = head
        let end = min(storage.count, head + limit)
        while index < end {
            if let block = storage[index], block.modes.matches(mode, isCommon: isCommon) {
                if index == head {
                    storage[index] = nil
                    head += 1
                    compactIfWorthIt()
                } else {
                    storage.remove(at: index)
                }
                return block
            }
            index += 1
        }
        return nil
    }

    func containsBlock(for mode: RunLoop.Mode, isCommon: Bool) -> Bool {
        storage[head...].contains { $0?.modes.matches(mode, isCommon: isCommon) ?? false }
    }

    /// Empties the queue, returning what was in it (for teardown).
    mutating func removeAll() -> [PendingBlock] {
        let rest = storage[head...].compactMap { $0 }
        storage.removeAll()
        head = 0
        return rest
    }

    private mutating func compactIfWorthIt() {
        if head == storage.count {
            storage.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= storage.count {
            storage.removeFirst(head)
            head = 0
        }
    }
}
