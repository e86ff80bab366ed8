internal import CLinuxSupport
import DequeModule
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
/// `RunLoopError.loopGone`) and its fds closed, except the wake-up eventfd,
/// which lives as long as the loop object so that a late `wakeUp()` is
/// always harmless. Adding anything to a torn-down loop adds nothing and
/// logs one warning per loop, for every kind of item alike; performing on
/// it returns false (or throws, for the APIs that return a result).
///
/// A sleeping loop makes one blocking `epoll_wait` on its running mode's wait
/// set: the mode's socket sources, an eventfd for wake-ups and a timerfd for
/// the next timer or deadline. Nothing polls (S-RUN-9).
public final class RunLoop: @unchecked Sendable {
    // @unchecked Sendable: what any thread may change is in `state`, behind
    // its lock, or atomic; what `waiter` keeps for the loop thread, and
    // `dueTimers`, are touched by the owning thread alone, which
    // `preconditionOwnedByCurrentThread` enforces for every run.

    /// The name of the loop's thread, used in every diagnostic (S-THR-5).
    public let threadName: String
    let ownerTID: Int32
    /// The process's main loop (which may be made from another thread).
    let isMain: Bool
    let logger: Logger
    /// The eventfd, timerfd, wait sets and ready list the loop sleeps on.
    let waiter: LoopWaiter
    /// The loop's guarded state: modes and their items, queued blocks,
    /// lifecycle, clock.
    let state: Locked<LoopState>

    /// Loop thread only: scratch for the timers due in one pass, reused to
    /// avoid allocating.
    // U-DUE-TIMERS (docs/unsafe-sites.md).
    @exclusivity(unchecked) var dueTimers: [Timer] = []

    /// Loop thread only: plain blocks taken off the head of the queue
    /// several at a time under one lock, oldest first, and not yet run
    /// (`drainBlocks`). Older than every block still queued, so any drain
    /// runs them first, a run nested in one of them included; a stop puts
    /// them back at the queue's head. Empty between drains.
    // U-TAKEN-BLOCKS (docs/unsafe-sites.md).
    @exclusivity(unchecked) var takenBlocks = Deque<PendingBlock>()

    @usableFromInline let stopRequested = Atomic<Bool>(false)
    /// Bumped under the lock by every change to any mode's items; the loop
    /// thread refreshes its snapshot when it changes.
    @usableFromInline let itemsVersion = Atomic<UInt64>(0)
    /// Bumped under the lock by every change that may move when a timer
    /// of any mode fires or the loop wakes for one: an item added, removed
    /// or changed (a timer's date or tolerance), the clock, and a firing.
    /// A run keeps what it read from its heap until this moves
    /// (`CachedTimerSchedule`).
    let timerChanges = Atomic<UInt64>(0)
    let completedPasses = Atomic<UInt64>(0)
    /// `state.blocks.count`, readable without the lock, so that a pass with
    /// no block queued (most passes) skips the lock. Changed under the lock.
    let pendingBlockCount = Atomic<Int>(0)
    private let ownedByLoopThread = Atomic<Bool>(false)
    /// Loop thread only: a job of the loop's executor is running, so a run
    /// nested in it runs no other (S-EXEC-1); and whether that job's nested
    /// runs were already warned about a job they cannot run.
    let jobRunning = Atomic<Bool>(false)
    let warnedAboutBlockedJob = Atomic<Bool>(false)
    /// The main loop's: DispatchQueue.main as one of its inputs (S-EXEC-3).
    let mainQueue: MainQueue?

    /// Loops alive in this process, for leak tests.
    static let liveCount = Atomic<Int>(0)
    /// Keeps the loop's side table visible to LeakSanitizer (loops are
    /// weakly referenced, and some live until exit: the main loop, those of
    /// threads that never exit).
    private var sideTableAnchor = SideTableAnchor()

    init(ownerTID: Int32, threadName: String, isMain: Bool = false) throws(RunLoopError) {
        self.ownerTID = ownerTID
        self.isMain = isMain
        mainQueue = isMain ? MainQueue() : nil
        self.threadName = threadName
        var logger = Logger(label: "RunLoopKit")
        logger[metadataKey: "thread"] = "\(threadName)"
        self.logger = logger
        waiter = try LoopWaiter()
        state = Locked(LoopState())
        Self.liveCount.wrappingAdd(1, ordering: .relaxed)
        sideTableAnchor.hold(self)
    }

    deinit {
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
    /// - Throws: `RunLoopError.systemCall` if its eventfd, timerfd or epoll
    ///   set cannot be made.
    public static func forCurrentThread() throws(RunLoopError) -> RunLoop {
        try forCurrentThread(named: nil)
    }

    /// The main thread's loop, from any thread (S-THR-2).
    ///
    /// Run on the main thread in a common mode, it also runs the blocks of
    /// `DispatchQueue.main`, and with them `@MainActor` jobs, as
    /// Foundation's does (S-EXEC-3); its common modes are therefore never
    /// empty. Not in a program with an async main: there the main thread is
    /// parked in `dispatch_main()`.
    public static var main: RunLoop { mainLoop }

    static func forCurrentThread(named name: String?) throws(RunLoopError) -> RunLoop {
        if let existing = pthread_getspecific(currentLoopKey) {
            // U-LOOP-SLOT (docs/unsafe-sites.md).
            return Unmanaged<RunLoop>.fromOpaque(existing).takeUnretainedValue()
        }
        let loop = ThreadIdentity.isMainThread
            ? mainLoop
            : try RunLoop(ownerTID: ThreadIdentity.currentTID, threadName: name ?? ThreadIdentity.currentName)
        // The key holds a retain; its destructor tears the loop down at thread exit.
        // U-LOOP-SLOT (docs/unsafe-sites.md).
        pthread_setspecific(currentLoopKey, Unmanaged.passRetained(loop).toOpaque())
        return loop
    }

    /// The calling thread's loop if it already has one; never makes one
    /// (S-THR-1: a thread that never asks for its loop never gets one).
    static var existingForCurrentThread: RunLoop? {
        guard let existing = pthread_getspecific(currentLoopKey) else { return nil }
        // U-LOOP-SLOT (docs/unsafe-sites.md).
        return Unmanaged<RunLoop>.fromOpaque(existing).takeUnretainedValue()
    }

    /// Tears down the calling thread's loop now rather than at thread exit,
    /// so that its fds are closed before whoever joins the thread returns.
    /// The slot is emptied once the loop is dead: the jobs that run first
    /// (S-EXEC-1) still find their loop as `RunLoop.current`.
    static func tearDownCurrentThreadLoop() {
        guard let existing = pthread_getspecific(currentLoopKey) else { return }
        // U-LOOP-SLOT (docs/unsafe-sites.md).
        Unmanaged<RunLoop>.fromOpaque(existing).takeRetainedValue().tearDown {
            pthread_setspecific(currentLoopKey, nil)
        }
    }

    /// Every loop but the main one is made on its own thread and kept in that
    /// thread's slot. The main loop may be made from another thread first, so
    /// the main thread is recognised by its tid (the pid). Comparing tids for
    /// other loops would be wrong: a dead thread's tid comes round again.
    var isOwnedByCurrentThread: Bool {
        // U-LOOP-SLOT (docs/unsafe-sites.md).
        pthread_getspecific(currentLoopKey) == Unmanaged.passUnretained(self).toOpaque()
            || (isMain && ThreadIdentity.isMainThread)
    }

    func preconditionOwnedByCurrentThread(_ operation: @autoclosure () -> String) {
        guard !isOwnedByCurrentThread else { return }
        // The likeliest way to run the main loop off the main thread: code
        // after a top-level `await` in main.swift resumes on another thread.
        let hint = isMain
            ? " If this is code after an `await` in main.swift or an async main, the await moved it off the main thread: run RunLoop.main from synchronous top-level code, before any await, or run your own loop on a LoopThread."
            : ""
        preconditionFailure(
            "RunLoop.\(operation()): this run loop belongs to thread '\(threadName)' (tid \(ownerTID)) but was run from tid \(ThreadIdentity.currentTID). Only a loop's own thread may run it: use RunLoop.current on this thread, or perform(_:) to get code onto that loop's thread.\(hint)"
        )
    }

    // MARK: - State anyone may read

    /// The mode of the innermost run in progress, or nil when the loop is not
    /// running (S-MODE-6). Any thread.
    public var currentMode: Mode? { state.withLock { $0.modeStack.last } }

    /// True while the loop sleeps in step 8 of S-RUN-2 (S-RUN-7). Any thread;
    /// the answer may be stale by the time it is read.
    public var isWaiting: Bool { waiter.waiting.load(ordering: .acquiring) }

    /// The modes marked common, in the order they were marked; always
    /// includes `.default`, first (S-MODE-3). Any thread.
    public var commonModes: [Mode] { state.withLock { $0.commonModeNames } }

    /// Every mode the loop has (CFRunLoopCopyAllModes): in the order the
    /// loop first used them, then the common modes it has not used yet.
    /// Any thread.
    public var allModes: [Mode] {
        state.withLock { state in state.modes.names + state.commonModeNames.filter { state.modes.place(of: $0) == nil } }
    }

    /// Passes through steps 2 to 11 completed so far, in all runs. An idle
    /// loop does not add to it (S-RUN-9). Any thread.
    public var passesCompleted: UInt64 { completedPasses.load(ordering: .relaxed) }

    /// Receives a report of every pass and callout, on the loop's thread; nil
    /// for none. May be set from any thread; takes effect at the next pass.
    public var monitor: (any RunLoopMonitor)? {
        get { state.withLock { $0.monitor } }
        set { changeItems { $0.monitor = newValue } }
    }

    /// Whether this is the loop of a `LoopThread`.
    var isLoopThreadLoop: Bool {
        get { ownedByLoopThread.load(ordering: .relaxed) }
        set { ownedByLoopThread.store(newValue, ordering: .relaxed) }
    }

    /// Whether the loop's thread has exited, so that the loop was torn down
    /// (S-THR-3): nothing runs on it any more. Any thread.
    public var hasThreadExited: Bool { !state.withLock { $0.isAlive } }

    // MARK: - Waking and stopping

    /// Makes a sleeping loop pass through its sequence once (S-RUN-7). Any
    /// thread; never blocks. Wake-ups coalesce: until the loop has woken,
    /// further calls cost one atomic exchange. Waking a loop whose thread
    /// has exited does nothing.
    public func wakeUp() { waiter.wakeUp() }

    /// Ends the innermost run in progress with `.stopped`, after the current
    /// callout returns; if no run is in progress, the next run returns
    /// `.stopped` at once (S-RUN-4). Any thread. It does not end `run()` or
    /// `run(until:)`, which start a new run after each one that returns
    /// (S-RUN-6): that is why keep-alive threads should use `LoopThread`.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        wakeUp()
    }

    // MARK: - Changing items

    /// Changes the guarded state and bumps the item version, so that the
    /// loop thread re-reads its items; wakes the loop when the change comes
    /// from another thread (the loop's own thread re-reads its items before
    /// it next sleeps anyway).
    @discardableResult
    func changeItems<T>(_ change: (inout LoopState) -> T) -> T {
        changeItems(bumpingIf: { (change(&$0), true) })
    }

    /// As `changeItems`, for a change that may leave the loop's snapshots
    /// current (a timer's: `ModeItem.outdatesSnapshot`): `change` says
    /// whether the item version moves.
    func changeItems<T>(bumpingIf change: (inout LoopState) -> (result: T, outdated: Bool)) -> T {
        let result = state.withLock { state in
            let (result, outdated) = change(&state)
            if outdated { bumpItemsVersion() }
            noteTimerChange()
            return result
        }
        if !isOwnedByCurrentThread { wakeUp() }
        return result
    }

    /// Under the lock.
    func bumpItemsVersion() {
        itemsVersion.wrappingAdd(1, ordering: .releasing)
    }

    /// Under the lock: what a run read from its timer heaps is outdated.
    func noteTimerChange() {
        timerChanges.wrappingAdd(1, ordering: .releasing)
    }
}

/// The thread-local slot of each thread's loop. Its destructor tears the loop
/// down when the thread exits (S-THR-3).
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    let rc = pthread_key_create(&key) { pointer in
        guard let pointer else { return }
        // U-LOOP-SLOT (docs/unsafe-sites.md).
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
