import DequeModule

/// FIFO of pending blocks (S-BLK-4), with Foundation's performer order on
/// top: while a block of another order than 0 waits, a pop takes the lowest
/// order first (equal orders in the order queued). Guarded by the loop's
/// lock. A ring buffer (`Deque`): popping from the head and appending reuse
/// the same storage, so a steady stream of performs allocates and moves
/// nothing, and plain performs (order 0, the only kind while no ordered
/// one waits) pop from the head.
struct BlockQueue {
    private var storage = Deque<PendingBlock>()
    /// How many queued blocks have an order other than 0: while none, a pop
    /// is the plain FIFO's.
    private var orderedCount = 0
    /// The modes the loop's executor runs its jobs in (S-EXEC-1):
    /// `LoopThread.executorModes`.
    var jobModes = ModeSelector.common

    var count: Int { storage.count }

    mutating func append(_ block: consuming PendingBlock) {
        if block.order != 0 { orderedCount += 1 }
        storage.append(block)
    }

    /// Moves the plain blocks at the head of the queue (order 0, no tag, no
    /// one waiting, not a job) that may run in `mode`, up to `limit` of them
    /// and no more than `room`, into `taken`, oldest first; stops at the
    /// first block that is not such a block. Only the head: every block left
    /// in the queue is then newer than every block taken, so running the
    /// taken ones first keeps S-BLK-4's order for a run in any mode. Nothing
    /// while ordered blocks wait (their pops choose by order). Returns how
    /// many it moved.
    mutating func takePlainHead(matching mode: RunLoop.Mode, isCommon: Bool, limit: Int, room: Int,
                                into taken: inout Deque<PendingBlock>) -> Int {
        guard orderedCount == 0 else { return 0 }
        // Counted in place first (no copy of a block), then moved.
        let end = min(storage.count, limit, room)
        var count = 0
        while count < end, storage[count].isPlain, storage[count].modes.matches(mode, isCommon: isCommon) {
            count += 1
        }
        for _ in 0..<count { taken.append(storage.removeFirst()) }
        return count
    }

    /// Puts blocks `takePlainHead` took back at the head, in their order
    /// (a drain stopped before running them).
    mutating func putBackAtHead(_ taken: Deque<PendingBlock>) {
        storage.prepend(contentsOf: taken)
    }

    /// Takes the first block, among the first `limit`, that may run in
    /// `mode` (the lowest order first while ordered blocks wait). Blocks
    /// queued after a drain began sit behind its `limit`, so that they wait
    /// for the next pass, as CFRunLoop's do. Without `jobs`, executor jobs
    /// are passed over (one is running: S-EXEC-1's one job at a time).
    mutating func popFirst(matching mode: RunLoop.Mode, isCommon: Bool, limit: Int, jobs: Bool = true) -> PendingBlock? {
        let end = min(storage.count, limit)
        if orderedCount > 0 { return popLowestOrder(matching: mode, isCommon: isCommon, end: end, jobs: jobs) }
        var index = 0
        while index < end {
            if matches(storage[index], mode, isCommon: isCommon, jobs: jobs) {
                return index == 0 ? storage.removeFirst() : storage.remove(at: index)
            }
            index += 1
        }
        return nil
    }

    /// The ordered case of `popFirst`: the matching block of lowest order
    /// before `end`, the first queued among equals.
    private mutating func popLowestOrder(matching mode: RunLoop.Mode, isCommon: Bool, end: Int, jobs: Bool) -> PendingBlock? {
        var best: Int?
        var index = 0
        while index < end {
            if matches(storage[index], mode, isCommon: isCommon, jobs: jobs),
               best.map({ storage[index].order < storage[$0].order }) ?? true {
                best = index
            }
            index += 1
        }
        guard let best else { return nil }
        let block = best == 0 ? storage.removeFirst() : storage.remove(at: best)
        if block.order != 0 { orderedCount -= 1 }
        return block
    }

    /// Whether a block that may still run waits for `mode` (a cancelled one
    /// does not count: it will be dropped unrun).
    func containsBlock(for mode: RunLoop.Mode, isCommon: Bool) -> Bool {
        storage.contains { block in
            guard block.request?.isCancelled != true else { return false }
            return matches(block, mode, isCommon: isCommon, jobs: true)
        }
    }

    /// Whether `block` may run in `mode`: a block by its own modes, a job by
    /// the executor's, and only if `jobs` (no job is running).
    @inline(__always)
    private func matches(_ block: borrowing PendingBlock, _ mode: RunLoop.Mode, isCommon: Bool, jobs: Bool) -> Bool {
        guard block.isJob else { return block.modes.matches(mode, isCommon: isCommon) }
        return jobs && jobModes.matches(mode, isCommon: isCommon)
    }

    /// Whether a job waits, in any mode.
    var containsJob: Bool { storage.contains { $0.isJob } }

    /// Takes every queued job out, in queue order, leaving the blocks.
    mutating func removeJobs() -> [PendingBlock] {
        let jobs = copy { $0.isJob }
        guard !jobs.isEmpty else { return [] }
        storage.removeAll { $0.isJob }
        return jobs
    }

    /// Removes the blocks queued with `tag`, returning them in queue order.
    mutating func removeAll(tagged tag: String) -> [PendingBlock] {
        let removed = copy { $0.tag == tag }
        guard !removed.isEmpty else { return [] }
        storage.removeAll { $0.tag == tag }
        orderedCount = storage.reduce(0) { $0 + ($1.order != 0 ? 1 : 0) }
        return removed
    }

    /// Empties the queue, returning what was in it (for teardown).
    mutating func removeAll() -> [PendingBlock] {
        let rest = copy { _ in true }
        storage.removeAll()
        orderedCount = 0
        return rest
    }

    /// The queued blocks that `include` picks, in queue order, appended one
    /// by one: `Array(deque)` of an empty deque writes the count into the
    /// runtime's shared empty-array storage, a write ThreadSanitizer sees
    /// racing with the same write from another thread.
    private func copy(_ include: (PendingBlock) -> Bool) -> [PendingBlock] {
        var picked: [PendingBlock] = []
        for block in storage where include(block) { picked.append(block) }
        return picked
    }
}
