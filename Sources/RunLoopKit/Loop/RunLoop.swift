internal import CLinuxSupport
import Glibc
import Logging
import Synchronization

/// A thread's run loop: CFRunLoop / NSRunLoop for Linux.
///
/// Every thread has at most one loop, made the first time the thread asks for
/// `RunLoop.current` (S-THR-1); the main thread's is `RunLoop.main`, reachable
/// from any thread (S-THR-2). A loop holds modes; each mode holds custom
/// sources (`CustomSource`, Source0), socket sources (`SocketSource`,
/// Source1), timers and observers. Running the loop in a mode waits for and
/// services exactly that mode's items, in the order of S-RUN-2.
///
/// ```swift
/// let loop = RunLoop.current
/// let timer = try Timer(timeInterval: 1, repeats: false) { _ in print("fired") }
/// loop.add(timer, forMode: .default)
/// loop.run(mode: .default, seconds: 2)   // fires once, then returns .finished
/// ```
///
/// Threading (S-THR-4): every method is thread-safe, except running the loop,
/// which only its own thread may do (a programming error that traps with a
/// message). When the loop's thread exits, the loop is torn down (S-THR-3):
/// its sources are cancelled, its timers and observers invalidated, its
/// pending blocks discarded (whoever waits for them gets
/// `RunLoopError.loopThreadExited`) and its fds closed, except the wake-up
/// eventfd, which lives as long as the loop object so that a late `wakeUp()`
/// is always harmless. Adding to a torn-down loop does nothing; performing on
/// it returns false or throws.
///
/// A sleeping loop makes one blocking `epoll_wait` on its running mode's wait
/// set: the mode's socket sources, an eventfd for wake-ups and a timerfd for
/// the next timer or deadline. Nothing polls (S-RUN-9).
public final class RunLoop: @unchecked Sendable {
    // @unchecked Sendable: the shared state below is guarded by `lock` or is
    // atomic; what is marked "loop thread only" is touched by the owning
    // thread alone, which `preconditionOwnedByCurrentThread` enforces.

    /// The name of the loop's thread, used in every diagnostic (S-THR-5).
    public let threadName: String
    let ownerTID: Int32
    /// The process's main loop (which may be made from another thread).
    let isMain: Bool
    let logger: Logger
    let wakeUpSignal: WakeUpSignal

    // Loop thread only (and teardown, which runs on the loop thread).
    var wakeUpTimer: WakeUpTimer?
    var baseWaitSet: WaitSet?
    let eventBuffer: UnsafeMutablePointer<epoll_event>
    static let eventBufferCapacity: Int32 = 64
    /// Socket sources that may have input, in arrival order: the answer to
    /// step 6 of S-RUN-2 without a system call (DESIGN.md, ready list).
    var readyList = ReadyQueue()
    /// What this loop writes in `SocketSource.readyMark` while a source is
    /// on its ready list: unique to the loop, never 0.
    let readyID: UInt64 = RunLoop.nextReadyID.wrappingAdd(1, ordering: .relaxed).oldValue
    private static let nextReadyID = Atomic<UInt64>(1)
    /// Scratch for the timers due in one pass, reused to avoid allocating.
    var dueTimers: [Timer] = []

    let stopRequested = Atomic<Bool>(false)
    /// Set by the first `wakeUp()` after the loop last drained its eventfd,
    /// so that a burst of wake-ups costs one write (coalesced wake-ups).
    let wakeUpPending = Atomic<Bool>(false)
    let waiting = Atomic<Bool>(false)
    /// Bumped under `lock` by every change to any mode's items; the loop
    /// thread refreshes its snapshot when it changes.
    let itemsVersion = Atomic<UInt64>(0)
    let completedPasses = Atomic<UInt64>(0)
    private let ownedByLoopThread = Atomic<Bool>(false)

    let lock = Lock()
    // Guarded by lock.
    var modes: [Mode: ModeState] = [:]
    // Guarded by lock.
    var commonModeNames: Set<Mode> = [.default]
    // Guarded by lock: the items added to `.common` (S-MODE-3).
    let commonItems = ModeState(mode: .common)
    // Guarded by lock.
    var blocks = BlockQueue()
    /// `blocks.count`, readable without the lock, so that a pass with no
    /// block queued (most passes) skips the lock. Changed under the lock.
    let pendingBlockCount = Atomic<Int>(0)
    // Guarded by lock: the modes of the runs in progress, innermost last.
    var modeStack: [Mode] = []
    // Guarded by lock: epoll token -> socket source, for every source of this loop.
    var registeredSockets: [UInt64: SocketSource] = [:]
    // Guarded by lock: socket sources added since the loop thread last looked;
    // their sockets may already hold messages, which no edge will announce.
    var socketsToCheck: [SocketSource] = []
    // Guarded by lock.
    var isTornDown = false
    // Guarded by lock.
    var monitorStorage: (any RunLoopMonitor)?
    // Guarded by lock: delayed performs by tag, for cancelPerformRequests.
    var delayedPerforms: [String: [Timer]] = [:]

    /// Loops alive in this process, for leak tests.
    static let liveCount = Atomic<Int>(0)

    init(ownerTID: Int32, threadName: String, isMain: Bool = false) throws(RunLoopError) {
        self.ownerTID = ownerTID
        self.isMain = isMain
        self.threadName = threadName
        var logger = Logger(label: "RunLoopKit")
        logger[metadataKey: "thread"] = "\(threadName)"
        self.logger = logger
        wakeUpSignal = try WakeUpSignal()
        let timer = try WakeUpTimer()
        wakeUpTimer = timer
        eventBuffer = .allocate(capacity: Int(Self.eventBufferCapacity))
        let waitSet: WaitSet
        do {
            waitSet = try WaitSet()
            try waitSet.add(wakeUpSignal.fileDescriptor, token: WaitSet.wakeUpToken, edgeTriggered: false)
            try waitSet.add(timer.fileDescriptor, token: WaitSet.timerToken, edgeTriggered: false)
        } catch {
            eventBuffer.deallocate()
            throw error
        }
        baseWaitSet = waitSet
        Self.liveCount.wrappingAdd(1, ordering: .relaxed)
    }

    deinit {
        eventBuffer.deallocate()
        Self.liveCount.wrappingSubtract(1, ordering: .relaxed)
    }

    // MARK: - Finding loops

    /// The calling thread's loop, made on first use (S-THR-1).
    ///
    /// Traps if the loop cannot be made (the process is out of file
    /// descriptors); use `forCurrentThread()` to handle that as an error.
    public static var current: RunLoop {
        do {
            return try forCurrentThread()
        } catch {
            fatalError("RunLoop.current: could not make this thread's run loop: \(error). Use `try RunLoop.forCurrentThread()` to handle this as an error.")
        }
    }

    /// The calling thread's loop, made on first use (S-THR-1).
    /// - Throws: `RunLoopError.systemCallFailed` if its eventfd, timerfd or
    ///   epoll set cannot be made.
    public static func forCurrentThread() throws(RunLoopError) -> RunLoop {
        try forCurrentThread(named: nil)
    }

    /// The main thread's loop, from any thread (S-THR-2).
    public static var main: RunLoop { mainLoop }

    static func forCurrentThread(named name: String?) throws(RunLoopError) -> RunLoop {
        if let existing = pthread_getspecific(currentLoopKey) {
            return Unmanaged<RunLoop>.fromOpaque(existing).takeUnretainedValue()
        }
        let loop = ThreadIdentity.isMainThread
            ? mainLoop
            : try RunLoop(ownerTID: ThreadIdentity.currentTID, threadName: name ?? ThreadIdentity.currentName)
        // The key holds a retain; its destructor tears the loop down at thread exit.
        pthread_setspecific(currentLoopKey, Unmanaged.passRetained(loop).toOpaque())
        return loop
    }

    /// The calling thread's loop if it already has one; never makes one
    /// (S-THR-1: a thread that never asks for its loop never gets one).
    static var existingForCurrentThread: RunLoop? {
        guard let existing = pthread_getspecific(currentLoopKey) else { return nil }
        return Unmanaged<RunLoop>.fromOpaque(existing).takeUnretainedValue()
    }

    /// Tears down the calling thread's loop now rather than at thread exit,
    /// so that its fds are closed before whoever joins the thread returns.
    static func tearDownCurrentThreadLoop() {
        guard let existing = pthread_getspecific(currentLoopKey) else { return }
        pthread_setspecific(currentLoopKey, nil)
        Unmanaged<RunLoop>.fromOpaque(existing).takeRetainedValue().tearDown()
    }

    /// Every loop but the main one is made on its own thread and kept in that
    /// thread's slot. The main loop may be made from another thread first, so
    /// the main thread is recognised by its tid (the pid). Comparing tids for
    /// other loops would be wrong: a dead thread's tid comes round again.
    var isOwnedByCurrentThread: Bool {
        pthread_getspecific(currentLoopKey) == Unmanaged.passUnretained(self).toOpaque()
            || (isMain && ThreadIdentity.isMainThread)
    }

    func preconditionOwnedByCurrentThread(_ operation: @autoclosure () -> String) {
        precondition(
            isOwnedByCurrentThread,
            "RunLoop.\(operation()): this run loop belongs to thread '\(threadName)' (tid \(ownerTID)) but was run from tid \(ThreadIdentity.currentTID). Only a loop's own thread may run it: use RunLoop.current on this thread, or perform(_:) to get code onto that loop's thread."
        )
    }

    // MARK: - State anyone may read

    /// The mode of the innermost run in progress, or nil when the loop is not
    /// running (S-MODE-6).
    public var currentMode: Mode? { lock.withLock { modeStack.last } }

    /// True while the loop sleeps in step 8 of S-RUN-2 (S-RUN-7).
    public var isWaiting: Bool { waiting.load(ordering: .acquiring) }

    /// The modes marked common; always includes `.default` (S-MODE-3).
    public var commonModes: [Mode] { lock.withLock { Array(commonModeNames) } }

    /// Every mode the loop has (CFRunLoopCopyAllModes).
    public var allModes: [Mode] { lock.withLock { Array(Set(modes.keys).union(commonModeNames)) } }

    /// Passes through steps 2 to 11 completed so far, in all runs. An idle
    /// loop does not add to it (S-RUN-9).
    public var passesCompleted: UInt64 { completedPasses.load(ordering: .relaxed) }

    /// Receives a report of every pass and callout, on the loop's thread; nil
    /// for none. May be set from any thread; takes effect at the next pass.
    public var monitor: (any RunLoopMonitor)? {
        get { lock.withLock { monitorStorage } }
        set { lock.withLock { monitorStorage = newValue; bumpVersionLocked() } }
    }

    /// Whether this is the loop of a `LoopThread`.
    var isLoopThreadLoop: Bool {
        get { ownedByLoopThread.load(ordering: .relaxed) }
        set { ownedByLoopThread.store(newValue, ordering: .relaxed) }
    }

    /// Whether the loop's thread has exited, so that the loop was torn down
    /// (S-THR-3): nothing runs on it any more.
    public var hasThreadExited: Bool { lock.withLock { isTornDown } }

    // MARK: - Waking and stopping

    /// Makes a sleeping loop pass through its sequence once (S-RUN-7). Any
    /// thread; never blocks. Wake-ups coalesce: until the loop has woken,
    /// further calls cost one atomic exchange.
    public func wakeUp() {
        if !wakeUpPending.exchange(true, ordering: .acquiringAndReleasing) {
            wakeUpSignal.signal()
        }
    }

    /// Ends the innermost run in progress with `.stopped`, after the current
    /// callout returns; if no run is in progress, the next run returns
    /// `.stopped` at once (S-RUN-4). Any thread. It does not end `run()` or
    /// `run(until:)`, which start a new run after each one that returns
    /// (S-RUN-6): that is why keep-alive threads should use `LoopThread`.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wakeUp()
    }

    // MARK: - Modes

    /// Marks `mode` common: every item added to `.common`, now or later, is in
    /// it too (S-MODE-3). Any thread.
    public func addCommonMode(_ mode: Mode) {
        guard mode != .common else { return }
        var scheduled: [CustomSource] = []
        lock.withLock {
            guard !isTornDown, commonModeNames.insert(mode).inserted else { return }
            let state = stateLocked(mode)
            for source in commonItems.customSources
            where ModeState.insertOrdered(source, into: &state.customSources, order: \.order) {
                scheduled.append(source)
            }
            for timer in commonItems.timers { _ = ModeState.append(timer, to: &state.timers) }
            for observer in commonItems.observers {
                _ = ModeState.insertOrdered(observer, into: &state.observers, order: \.order)
            }
            for source in commonItems.socketSources where !state.socketSources.contains(where: { $0 === source }) {
                do {
                    try registerLocked(source, in: state)
                } catch {
                    logger.error("addCommonMode(\(mode)): socket source not added to the new common mode: \(error)")
                }
            }
            bumpVersionLocked()
        }
        for source in scheduled { source.didSchedule(on: self, mode: mode) }
        wakeUp()
    }

    // MARK: - Custom sources (Source0)

    /// Adds a custom source to `mode` (or to every common mode for `.common`),
    /// calling its `schedule` handler for each mode it joins. Any thread.
    public func add(_ source: CustomSource, forMode mode: Mode) {
        guard source.isValid else { return }
        let joined: [Mode] = lock.withLock {
            guard !isTornDown else { return [] }
            return updateLocked(mode) { ModeState.insertOrdered(source, into: &$0.customSources, order: \.order) }
        }
        for joinedMode in joined { source.didSchedule(on: self, mode: joinedMode) }
        if !source.isValid { removeFromAllModes(source) }  // lost a race with invalidate()
    }

    /// Removes a custom source from `mode`, calling its `cancel` handler. Any thread.
    public func remove(_ source: CustomSource, forMode mode: Mode) {
        let left: [Mode] = lock.withLock {
            updateLocked(mode) { ModeState.remove(source, from: &$0.customSources) }
        }
        let stillHere = contains(source)
        for leftMode in left { source.didCancel(on: self, mode: leftMode, leftLoop: !stillHere) }
        wakeUp()  // the running mode may now be empty
    }

    public func contains(_ source: CustomSource, inMode mode: Mode) -> Bool {
        lock.withLock { listLocked(mode).customSources.contains { $0 === source } }
    }

    func removeFromAllModes(_ source: CustomSource) {
        let left: [Mode] = lock.withLock {
            _ = ModeState.remove(source, from: &commonItems.customSources)
            return modes.values.filter { ModeState.remove(source, from: &$0.customSources) }.map(\.mode)
        }
        for leftMode in left { source.didCancel(on: self, mode: leftMode, leftLoop: true) }
        bumpVersionAndWake()
    }

    private func contains(_ source: CustomSource) -> Bool {
        lock.withLock { modes.values.contains { $0.customSources.contains { $0 === source } } }
    }

    // MARK: - Timers

    /// Adds a timer to `mode` (or every common mode for `.common`) and
    /// re-arms the loop. Any thread. A timer belongs to one loop: adding it
    /// to a second loop is a programming error and traps.
    public func add(_ timer: Timer, forMode mode: Mode) {
        guard timer.isValid else { return }
        precondition(
            timer.binding.bind(to: self),
            "RunLoop.add(_:forMode:): this Timer is already scheduled on another run loop. A timer belongs to one loop (in any of its modes); create a separate Timer for each loop."
        )
        let added: Bool = lock.withLock {
            guard !isTornDown else { return false }
            _ = updateLocked(mode) { ModeState.append(timer, to: &$0.timers) }
            return true
        }
        guard added else { timer.binding.clear(); return }
        if !timer.isValid { removeFromAllModes(timer); return }  // lost a race with invalidate()
        bumpVersionAndWake()
    }

    /// Removes a timer from `mode` without invalidating it (CFRunLoopRemoveTimer).
    public func remove(_ timer: Timer, forMode mode: Mode) {
        lock.withLock {
            _ = updateLocked(mode) { ModeState.remove(timer, from: &$0.timers) }
            if !modes.values.contains(where: { $0.timers.contains { $0 === timer } })
                && !commonItems.timers.contains(where: { $0 === timer }) {
                timer.binding.clear()
            }
        }
        wakeUp()
    }

    public func contains(_ timer: Timer, inMode mode: Mode) -> Bool {
        lock.withLock { listLocked(mode).timers.contains { $0 === timer } }
    }

    func removeFromAllModes(_ timer: Timer) {
        lock.withLock {
            _ = ModeState.remove(timer, from: &commonItems.timers)
            for state in modes.values { _ = ModeState.remove(timer, from: &state.timers) }
            timer.binding.clear()
        }
        bumpVersionAndWake()
    }

    /// A timer's fire date or tolerance changed (from any thread): re-arm (S-TMR-5).
    func timerDidChange() { bumpVersionAndWake() }

    // MARK: - Observers

    /// Adds an observer to `mode` (or every common mode for `.common`). Any
    /// thread. An observer belongs to one loop: adding it to a second traps.
    public func add(_ observer: RunLoopObserver, forMode mode: Mode) {
        guard observer.isValid else { return }
        precondition(
            observer.binding.bind(to: self),
            "RunLoop.add(_:forMode:): this RunLoopObserver already observes another run loop. Create one observer per loop."
        )
        let added: Bool = lock.withLock {
            guard !isTornDown else { return false }
            _ = updateLocked(mode) { ModeState.insertOrdered(observer, into: &$0.observers, order: \.order) }
            return true
        }
        guard added else { observer.binding.clear(); return }
        if !observer.isValid { removeFromAllModes(observer) }
    }

    public func remove(_ observer: RunLoopObserver, forMode mode: Mode) {
        lock.withLock { _ = updateLocked(mode) { ModeState.remove(observer, from: &$0.observers) } }
    }

    public func contains(_ observer: RunLoopObserver, inMode mode: Mode) -> Bool {
        lock.withLock { listLocked(mode).observers.contains { $0 === observer } }
    }

    func removeFromAllModes(_ observer: RunLoopObserver) {
        lock.withLock {
            _ = ModeState.remove(observer, from: &commonItems.observers)
            for state in modes.values { _ = ModeState.remove(observer, from: &state.observers) }
            observer.binding.clear()
            bumpVersionLocked()
        }
    }

    // MARK: - Socket sources (Source1)

    /// Adds a socket source to `mode` (or every common mode for `.common`).
    /// Any thread. A source belongs to one loop: adding it to a second traps.
    ///
    /// - Throws: `RunLoopError` if the loop's thread has exited, the socket's
    ///   ZMQ_FD cannot be read, or epoll refuses the fd.
    public func add(_ source: SocketSource, forMode mode: Mode) throws(RunLoopError) {
        guard source.isValid else { return }
        precondition(
            source.binding.bind(to: self),
            "RunLoop.add(_:forMode:): this SocketSource is already in another run loop. A socket belongs to one loop's thread; create the source on the socket for the loop that will own it."
        )
        let descriptor = try source.pollDescriptor()
        source.registeredDescriptor = descriptor
        try lock.withLock { () throws(RunLoopError) -> Void in
            guard !isTornDown else {
                source.binding.clear()
                throw .loopThreadExited(threadName: threadName)
            }
            let targets = mode == .common ? commonModeNames.map(stateLocked) : [stateLocked(mode)]
            var registeredIn: [ModeState] = []
            do throws(RunLoopError) {
                for state in targets where !state.socketSources.contains(where: { $0 === source }) {
                    try registerLocked(source, in: state)
                    registeredIn.append(state)
                }
            } catch {
                for state in registeredIn { unregisterLocked(source, from: state) }
                source.binding.clear()
                throw error
            }
            if mode == .common { _ = ModeState.append(source, to: &commonItems.socketSources) }
            registeredSockets[source.token] = source
            // Only a ZeroMQ socket may hold input that no edge will announce;
            // epoll reports a plain fd that is readable (level-triggered), and
            // one that is not must not reach the handler.
            if source.isSocket { socketsToCheck.append(source) }
            bumpVersionLocked()
        }
        wakeUp()
        if !source.isValid { removeFromAllModes(source) }
    }

    /// Removes a socket source from `mode`. Any thread.
    public func remove(_ source: SocketSource, forMode mode: Mode) {
        lock.withLock {
            if mode == .common {
                _ = ModeState.remove(source, from: &commonItems.socketSources)
                for name in commonModeNames { if let state = modes[name] { unregisterLocked(source, from: state) } }
            } else if let state = modes[mode] {
                unregisterLocked(source, from: state)
            }
            forgetIfUnusedLocked(source)
            bumpVersionLocked()
        }
        wakeUp()
    }

    public func contains(_ source: SocketSource, inMode mode: Mode) -> Bool {
        lock.withLock { listLocked(mode).socketSources.contains { $0 === source } }
    }

    func removeFromAllModes(_ source: SocketSource) {
        lock.withLock {
            _ = ModeState.remove(source, from: &commonItems.socketSources)
            for state in modes.values { unregisterLocked(source, from: state) }
            forgetIfUnusedLocked(source)
            bumpVersionLocked()
        }
        wakeUp()
    }

    private func registerLocked(_ source: SocketSource, in state: ModeState) throws(RunLoopError) {
        let waitSet: WaitSet
        if let existing = state.waitSet {
            waitSet = existing
        } else {
            waitSet = try WaitSet()
            try waitSet.add(wakeUpSignal.fileDescriptor, token: WaitSet.wakeUpToken, edgeTriggered: false)
            if let timer = wakeUpTimer {
                try waitSet.add(timer.fileDescriptor, token: WaitSet.timerToken, edgeTriggered: false)
            }
            state.waitSet = waitSet
        }
        let descriptor = source.registeredDescriptor
        try waitSet.add(descriptor.fd, token: source.token, edgeTriggered: descriptor.edgeTriggered)
        state.socketSources.append(source)
    }

    private func unregisterLocked(_ source: SocketSource, from state: ModeState) {
        guard ModeState.remove(source, from: &state.socketSources) else { return }
        state.waitSet?.remove(source.registeredDescriptor.fd)
    }

    private func forgetIfUnusedLocked(_ source: SocketSource) {
        let inUse = modes.values.contains { $0.socketSources.contains { $0 === source } }
            || commonItems.socketSources.contains { $0 === source }
        if !inUse {
            registeredSockets[source.token] = nil
            source.binding.clear()
        }
    }

    // MARK: - Shared helpers (lock held)

    /// The state of `mode`, made on first use (S-MODE-1).
    func stateLocked(_ mode: Mode) -> ModeState {
        if let state = modes[mode] { return state }
        let state = ModeState(mode: mode)
        modes[mode] = state
        return state
    }

    /// The list that holds `.common` items, or the mode's own.
    private func listLocked(_ mode: Mode) -> ModeState {
        mode == .common ? commonItems : (modes[mode] ?? ModeState(mode: mode))
    }

    /// Applies `change` to `mode`, or for `.common` to the common items and
    /// every common mode (S-MODE-3). Returns the real modes it changed.
    private func updateLocked(_ mode: Mode, _ change: (ModeState) -> Bool) -> [Mode] {
        defer { bumpVersionLocked() }
        guard mode == .common else { return change(stateLocked(mode)) ? [mode] : [] }
        guard change(commonItems) else { return [] }
        return commonModeNames.filter { change(stateLocked($0)) }
    }

    func bumpVersionLocked() {
        itemsVersion.wrappingAdd(1, ordering: .releasing)
    }

    /// Another thread's change must wake the loop so that it re-reads its
    /// items (and re-arms its timer); the loop's own thread re-reads them
    /// before it next sleeps anyway.
    private func bumpVersionAndWake() {
        lock.withLock { bumpVersionLocked() }
        if !isOwnedByCurrentThread { wakeUp() }
    }

    // MARK: - Blocks (S-BLK-1 to S-BLK-5)

    /// Queues `block` to run on the loop's thread in any common mode, and
    /// wakes the loop (S-BLK-1). Any thread; never blocks. Blocks queued from
    /// one thread run in that order (S-BLK-4). Running one counts as a handled
    /// source (S-BLK-5).
    ///
    /// - Returns: false if the loop's thread has exited; the block will not run.
    @discardableResult
    public func perform(_ block: @escaping @Sendable () -> Void) -> Bool {
        enqueue(PendingBlock(modes: .common, body: block, discarded: nil))
    }

    /// Queues `block` to run on the loop's thread while it runs one of
    /// `modes` (`.common` accepted), and wakes the loop (S-BLK-1).
    @discardableResult
    public func perform(inModes modes: [Mode], _ block: @escaping @Sendable () -> Void) -> Bool {
        enqueue(PendingBlock(modes: ModeSelector(modes), body: block, discarded: nil))
    }

    /// Runs `body` on the loop's thread and waits for its result or error
    /// (S-BLK-2). On the loop's own thread it runs at once.
    ///
    /// - Parameter timeout: how long to wait, nil for as long as the loop
    ///   lives. The block may still run after a timeout.
    /// - Throws: what `body` throws; `RunLoopError.loopThreadExited` if the
    ///   loop's thread has exited or exits before running it;
    ///   `RunLoopError.timedOut` after `timeout`.
    public func performAndWait<T: Sendable>(
        inModes modes: [Mode] = [.common],
        timeout: TimeInterval? = nil,
        _ body: @escaping @Sendable () throws -> T
    ) throws -> T {
        if isOwnedByCurrentThread { return try body() }
        var deadline = MonotonicClock.never
        if let timeout {
            try RunLoopError.validate(timeout, "timeout")
            deadline = MonotonicClock.instant(secondsFromNow: timeout)
        }
        let completion = Completion<T>()
        let name = threadName
        let accepted = enqueue(PendingBlock(
            modes: ModeSelector(modes),
            body: { completion.fill(Result { try body() }) },
            discarded: { completion.fill(.failure(RunLoopError.loopThreadExited(threadName: name))) }
        ))
        guard accepted else { throw RunLoopError.loopThreadExited(threadName: name) }
        guard let result = completion.wait(until: deadline) else {
            throw RunLoopError.timedOut(waitingFor: "a block on the run loop of '\(name)'")
        }
        return try result.get()
    }

    /// Runs `block` on this loop after `delay` seconds, while it runs one of
    /// `modes` (S-BLK-3): a one-shot timer, as performSelector:afterDelay: is.
    /// Cancel it with the returned timer's `invalidate()`, or all requests of
    /// a tag with `cancelPerformRequests(tag:)`.
    ///
    /// - Throws: `RunLoopError.invalidInterval` for a negative, NaN or infinite delay.
    @discardableResult
    public func perform(
        afterDelay delay: TimeInterval,
        inModes modes: [Mode] = [.default],
        tag: String? = nil,
        _ block: @escaping @Sendable () -> Void
    ) throws(RunLoopError) -> Timer {
        let timer = try Timer(timeInterval: delay, repeats: false) { [weak self] timer in
            if let tag { self?.forgetDelayedPerform(timer, tag: tag) }
            block()
        }
        if let tag { lock.withLock { delayedPerforms[tag, default: []].append(timer) } }
        for mode in modes { add(timer, forMode: mode) }
        return timer
    }

    /// Cancels every delayed perform queued with `tag` that has not run yet
    /// (cancelPreviousPerformRequests). Any thread.
    public func cancelPerformRequests(tag: String) {
        let timers = lock.withLock { delayedPerforms.removeValue(forKey: tag) ?? [] }
        for timer in timers { timer.invalidate() }
    }

    private func forgetDelayedPerform(_ timer: Timer, tag: String) {
        lock.withLock {
            delayedPerforms[tag]?.removeAll { $0 === timer }
            if delayedPerforms[tag]?.isEmpty == true { delayedPerforms[tag] = nil }
        }
    }

    func enqueue(_ block: PendingBlock) -> Bool {
        let accepted: Bool = lock.withLock {
            guard !isTornDown else { return false }
            blocks.append(block)
            pendingBlockCount.wrappingAdd(1, ordering: .releasing)
            return true
        }
        if accepted { wakeUp() }
        return accepted
    }

    // MARK: - Teardown (S-THR-3)

    /// Releases everything the loop holds; on the loop's thread, at its exit.
    func tearDown() {
        let (customSources, timers, observers, sockets, pending): (
            [(CustomSource, Mode)], [Timer], [RunLoopObserver], [SocketSource], [PendingBlock]
        ) = lock.withLock {
            guard !isTornDown else { return ([], [], [], [], []) }
            isTornDown = true
            var customSources: [(CustomSource, Mode)] = []
            var timers: [Timer] = [], observers: [RunLoopObserver] = [], sockets: [SocketSource] = []
            for state in modes.values {
                customSources += state.customSources.map { ($0, state.mode) }
                timers += state.timers
                observers += state.observers
                sockets += state.socketSources
            }
            timers += commonItems.timers
            observers += commonItems.observers
            sockets += commonItems.socketSources
            modes.removeAll()
            commonItems.customSources.removeAll()
            commonItems.timers.removeAll()
            commonItems.observers.removeAll()
            commonItems.socketSources.removeAll()
            registeredSockets.removeAll()
            socketsToCheck.removeAll()
            delayedPerforms.removeAll()
            monitorStorage = nil
            bumpVersionLocked()
            pendingBlockCount.store(0, ordering: .releasing)
            return (customSources, timers, observers, sockets, blocks.removeAll())
        }
        // A torn-down loop is never woken again: its eventfd stays quiet.
        wakeUpPending.store(true, ordering: .releasing)
        for (source, mode) in customSources { source.didCancel(on: self, mode: mode, leftLoop: true) }
        for timer in timers { timer.detach() }
        for observer in observers { observer.detach() }
        for source in sockets { source.detach() }
        for block in pending { block.discarded?() }
        while !readyList.isEmpty { forgetReady(readyList.remove(at: 0)) }
        dueTimers.removeAll()
        baseWaitSet = nil
        wakeUpTimer = nil
        if !pending.isEmpty {
            logger.debug("run loop torn down at thread exit; \(pending.count) queued block(s) discarded")
        }
    }
}

/// The thread-local slot of each thread's loop. Its destructor tears the loop
/// down when the thread exits (S-THR-3).
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    let rc = pthread_key_create(&key) { pointer in
        guard let pointer else { return }
        Unmanaged<RunLoop>.fromOpaque(pointer).takeRetainedValue().tearDown()
    }
    precondition(rc == 0, "pthread_key_create failed (\(rc)): the process is out of thread-specific keys")
    return key
}()

private let mainLoop: RunLoop = {
    do {
        return try RunLoop(ownerTID: getpid(), threadName: "main", isMain: true)
    } catch {
        fatalError("RunLoop.main: could not make the main thread's run loop: \(error)")
    }
}()
