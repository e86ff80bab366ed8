/// FIFO of pending blocks (S-BLK-4), with Foundation's performer order on
/// top: while a block of another order than 0 waits, a pop takes the lowest
/// order first (equal orders in the order queued). Guarded by the loop's
/// lock. Popping from the head and appending reuse the same storage, so a
/// steady stream of performs allocates nothing here, and plain performs
/// (order 0, the only kind while no ordered one waits) pop from the head.
struct BlockQueue {
    private var storage: [PendingBlock?] = []
    private var head = 0
    /// How many queued blocks have an order other than 0: while none, a pop
    /// is the plain FIFO's.
    private var orderedCount = 0
    /// The modes the loop's executor runs its jobs in (S-EXEC-1):
    /// `LoopThread.executorModes`.
    var jobModes = ModeSelector.common

    var count: Int { storage.count - head }
    var isEmpty: Bool { head == storage.count }

    mutating func append(_ block: PendingBlock) {
        if block.order != 0 { orderedCount += 1 }
        storage.append(block)
    }

    /// Takes the first block, among the first `limit`, that may run in
    /// `mode` (the lowest order first while ordered blocks wait). Blocks
    /// queued after a drain began sit behind its `limit`, so that they wait
    /// for the next pass, as CFRunLoop's do. Without `jobs`, executor jobs
    /// are passed over (one is running: S-EXEC-1's one job at a time).
    mutating func popFirst(matching mode: RunLoop.Mode, isCommon: Bool, limit: Int, jobs: Bool = true) -> PendingBlock? {
        let end = min(storage.count, head + limit)
        if orderedCount > 0 { return popLowestOrder(matching: mode, isCommon: isCommon, end: end, jobs: jobs) }
        var index = head
        while index < end {
            if let block = storage[index], matches(block, mode, isCommon: isCommon, jobs: jobs) {
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

    /// The ordered case of `popFirst`: the matching block of lowest order
    /// before `end`, the first queued among equals.
    private mutating func popLowestOrder(matching mode: RunLoop.Mode, isCommon: Bool, end: Int, jobs: Bool) -> PendingBlock? {
        var best: Int?
        var index = head
        while index < end {
            if let block = storage[index], matches(block, mode, isCommon: isCommon, jobs: jobs),
               best.map({ block.order < storage[$0]!.order }) ?? true {
                best = index
            }
            index += 1
        }
        guard let best, let block = storage[best] else { return nil }
        if best == head {
            storage[best] = nil
            head += 1
            compactIfWorthIt()
        } else {
            storage.remove(at: best)
        }
        if block.order != 0 { orderedCount -= 1 }
        return block
    }

    /// Whether a block that may still run waits for `mode` (a cancelled one
    /// does not count: it will be dropped unrun).
    func containsBlock(for mode: RunLoop.Mode, isCommon: Bool) -> Bool {
        storage[head...].contains { block in
            guard let block, block.request?.isCancelled != true else { return false }
            return matches(block, mode, isCommon: isCommon, jobs: true)
        }
    }

    /// Whether `block` may run in `mode`: a block by its own modes, a job by
    /// the executor's, and only if `jobs` (no job is running).
    @inline(__always)
    private func matches(_ block: PendingBlock, _ mode: RunLoop.Mode, isCommon: Bool, jobs: Bool) -> Bool {
        guard block.isJob else { return block.modes.matches(mode, isCommon: isCommon) }
        return jobs && jobModes.matches(mode, isCommon: isCommon)
    }

    /// Whether a job waits, in any mode.
    var containsJob: Bool { storage[head...].contains { $0?.isJob == true } }

    /// Takes every queued job out, in queue order, leaving the blocks.
    mutating func removeJobs() -> [PendingBlock] {
        var jobs: [PendingBlock] = []
        var kept: [PendingBlock?] = []
        for case let block? in storage[head...] {
            if block.isJob { jobs.append(block) } else { kept.append(block) }
        }
        guard !jobs.isEmpty else { return [] }
        storage = kept
        head = 0
        return jobs
    }

    /// Removes the blocks queued with `tag`, returning them in queue order.
    mutating func removeAll(tagged tag: String) -> [PendingBlock] {
        var removed: [PendingBlock] = []
        var kept: [PendingBlock?] = []
        for case let block? in storage[head...] {
            if block.origin.tag == tag { removed.append(block) } else { kept.append(block) }
        }
        guard !removed.isEmpty else { return [] }
        storage = kept
        head = 0
        orderedCount = kept.reduce(0) { $0 + ($1!.order != 0 ? 1 : 0) }
        return removed
    }

    /// Empties the queue, returning what was in it (for teardown).
    mutating func removeAll() -> [PendingBlock] {
        let rest = storage[head...].compactMap { $0 }
        storage.removeAll()
        head = 0
        orderedCount = 0
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
