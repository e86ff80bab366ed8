import Synchronization

/// The loop thread's copy of the running mode's items, refreshed whenever
/// the loop's item version changes. Copying the arrays only retains their
/// buffers, so a refresh allocates nothing.
package struct ModeSnapshot {
    /// An empty snapshot, read on first use. `package`: a request keeps one
    /// per nesting level between its runs of its private mode.
    package init() {}

    var version: UInt64 = .max
    /// The mode whose items these are (nil until the first refresh).
    var mode: RunLoop.Mode?
    var customSources: [CustomSource] = []
    /// Whether the mode has timers: their heap stays in the loop's state
    /// (`TimerHeap`), read under its lock only by a pass that needs it.
    var hasTimers = false
    /// What this run last read from the heap, kept until the loop's timers change.
    var timerSchedule = CachedTimerSchedule()
    var observers: [RunLoopObserver] = []
    var observedActivities: RunLoop.Activity = []
    var socketSources: [SocketSource] = []
    var socketSourceIDs: Set<ObjectIdentifier> = []
    /// Unique to each refresh of each snapshot in the process (see `contains`).
    var stamp: UInt64 = 0
    private static let nextStamp = Atomic<UInt64>(1)
    /// Whether the mode is one of the loop's common modes.
    var isCommon = false
    /// Whether the mode is a common mode of the main loop once it took the
    /// main queue (S-EXEC-3): its wait set holds the queue's eventfd.
    var holdsMainQueue = false
    /// Socket sources whose type can send (see `SocketSource.needsCheckBeforeSleeping`).
    var socketsToCheckBeforeSleeping: [SocketSource] = []
    var waitSet: WaitSet?
    var hasSourcesOrTimers = false
    var monitor: (any RunLoopMonitor)?
    /// The process's tracer (`RunLoop.tracer`), read at the start of each
    /// pass: told of what the monitor is told, after it.
    var tracer: (any RunLoopMonitor)?
    /// Whether anyone hears of passes and callouts.
    var isReported: Bool { monitor != nil || tracer != nil }
    /// What the mode's timers and the run's deadline are measured on.
    var clock = LoopClock.real

    /// Copies the mode's items out of the loop's state (lock held).
    mutating func copy(_ mode: RunLoop.Mode, from state: LoopState) {
        self.mode = mode
        isCommon = state.isCommon(mode)
        holdsMainQueue = isCommon && state.mainQueueDescriptor != nil
        monitor = state.monitor
        clock = state.clock
        // Read in place: a copy of the mode's state retains each of its arrays.
        if state.modes.read(mode, { copyItems(of: $0) }) == nil { copyItems(of: ModeState(mode: mode)) }
    }

    private mutating func copyItems(of items: borrowing ModeState) {
        customSources = items.customSources
        hasTimers = !items.timers.isEmpty
        observers = items.observers
        socketSources = items.socketSources
        waitSet = items.waitSet
        hasSourcesOrTimers = items.hasSourcesOrTimers
    }

    /// What is derived from the items, after a copy (no lock held).
    mutating func derive() {
        observedActivities = observers.reduce(into: []) { $0.formUnion($1.activities) }
        socketSourceIDs = Set(socketSources.map(ObjectIdentifier.init))
        stamp = Self.nextStamp.wrappingAdd(1, ordering: .relaxed).oldValue
        socketsToCheckBeforeSleeping = socketSources.filter(\.needsCheckBeforeSleeping)
    }

    /// The socket source with epoll token `token` among a mode's sources
    /// (a snapshot's `socketSources`), when the mode has a few: a look along
    /// them costs less than the loop's lock and its table. Nil otherwise,
    /// or if none has it.
    static func socketSource(withToken token: UInt64, in socketSources: [SocketSource]) -> SocketSource? {
        guard socketSources.count <= 8 else { return nil }
        for source in socketSources where source.token == token { return source }
        return nil
    }

    /// Whether `source` is one of the mode's socket sources. A source stamped
    /// by this very refresh is (stamps are never reused); any other is looked
    /// up, then stamped, so a busy source is looked up once per refresh,
    /// not once per message. Nested runs of other modes may re-stamp a
    /// source: that only costs the next lookup.
    func contains(_ source: SocketSource) -> Bool {
        if source.memberStamp.load(ordering: .relaxed) == stamp { return true }
        guard socketSourceIDs.contains(ObjectIdentifier(source)) else { return false }
        source.memberStamp.store(stamp, ordering: .relaxed)
        return true
    }
}
