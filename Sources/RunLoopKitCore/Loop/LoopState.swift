import Synchronization

/// Everything about a loop that any thread may change: the loop's lock
/// (`RunLoop.state`, a `Locked<LoopState>`) is the only way in.
struct LoopState {
    /// The loop's life (S-THR-3): a loop is alive until its thread exits.
    enum Lifecycle {
        case alive
        /// The thread exited and everything was released; `warned` records
        /// that the one warning about adding to a dead loop was logged.
        case tornDown(warned: Bool)
    }

    var lifecycle = Lifecycle.alive
    var modes = ModeTable()
    /// The modes marked common (S-MODE-3), in the order they were marked;
    /// a few, so looked along rather than hashed (as `ModeTable`).
    var commonModeNames: [RunLoop.Mode] = [.default]
    /// The items added to `.common` (S-MODE-3), to be copied into every
    /// mode marked common later. Its timer heap is the loop's first.
    var commonItems = ModeState(mode: .common, timerHeapID: LoopState.commonItemsHeapID)
    /// The number of the common items' timer heap.
    static let commonItemsHeapID: UInt32 = 1
    /// The number of the next mode's timer heap: unique in the loop, since
    /// a mode's state, once made, stays until the loop is torn down (a
    /// timer keeps its place in each heap under that number).
    private var nextTimerHeapID = LoopState.commonItemsHeapID + 1
    var blocks = BlockQueue()
    /// The executors whose jobs the loop runs (its LoopThread's serial and
    /// task executors), set by the first job each queues.
    var jobExecutors = JobExecutors()
    /// The modes of the runs in progress, innermost last.
    var modeStack: [RunLoop.Mode] = []
    /// epoll token -> socket source, for every socket source of this loop.
    var registeredSockets: [UInt64: SocketSource] = [:]
    /// Socket sources added since the loop thread last looked: their
    /// sockets may already hold messages, which no edge will announce.
    var socketsToCheck: [SocketSource] = []
    var monitor: (any RunLoopMonitor)?
    /// Delayed performs by tag, for `cancelPerformRequests(tag:)`.
    var delayedPerforms: [String: [Timer]] = [:]
    /// What the loop's timers and run deadlines are measured on (S-TMR-7).
    var clock = LoopClock.real
    /// Whether anything was ever scheduled on the loop: after that, its
    /// clock can no longer change.
    var hasScheduled = false
    /// The main loop's, once it first ran on the main thread: the main
    /// queue's eventfd, in the wait set of every common mode (S-EXEC-3).
    var mainQueueDescriptor: Int32?

    /// A LoopThread's two executors, as a job runs on them (S-EXEC-1, S-EXEC-2).
    struct JobExecutors {
        var serial: UnownedSerialExecutor?
        var task: UnownedTaskExecutor?
    }

    var isAlive: Bool {
        if case .alive = lifecycle { return true }
        return false
    }

    // The accessors below change a mode's state in place: a copy of a
    // ModeState retains and releases each of its arrays, and a change made
    // to a copy copies the mode's items (a timer heap of 100,000 entries).

    /// Applies `body` to the state of `mode`, made on first use (S-MODE-1).
    mutating func withMode<T, E: Error>(_ mode: RunLoop.Mode, _ body: (inout ModeState) throws(E) -> T) throws(E) -> T {
        let place: Int
        if let found = modes.place(of: mode) {
            place = found
        } else {
            place = modes.append(ModeState(mode: mode, timerHeapID: nextTimerHeapID))
            nextTimerHeapID += 1
        }
        return try modes.withState(at: place, body)
    }

    /// Applies `body` to the state of `mode` if the mode was ever used;
    /// nil if it was not.
    mutating func withExistingMode<T>(_ mode: RunLoop.Mode, _ body: (inout ModeState) -> T) -> T? {
        guard let place = modes.place(of: mode) else { return nil }
        return modes.withState(at: place, body)
    }

    /// Applies `body` to the state of every mode.
    mutating func forEachMode(_ body: (inout ModeState) -> Void) {
        for place in modes.states.indices { modes.withState(at: place, body) }
    }

    /// Whether `item` is still in any mode of the loop (or its common items).
    func holds<Item: ModeItem>(_ item: Item) -> Bool {
        commonItems.contains(item) || modes.states.contains { $0.contains(item) }
    }

    /// Whether `mode` is marked common.
    func isCommon(_ mode: RunLoop.Mode) -> Bool { commonModeNames.contains(mode) }
}
