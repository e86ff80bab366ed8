internal import CLinuxSupport
import Glibc
import Synchronization

/// What a loop sleeps on (S-RUN-2 step 8, S-RUN-9): an eventfd that any
/// thread signals to wake it, a timerfd armed for the next timer or
/// deadline, and an epoll set per mode that holds socket sources (made by
/// `makeModeWaitSet`), plus the ready list of sockets that may hold input.
///
/// Threading: `wakeUp()` and `makeModeWaitSet()` from any thread (the
/// latter under the loop's lock); everything else on the loop's thread.
final class LoopWaiter: @unchecked Sendable {
    // @unchecked Sendable: the eventfd and the timerfd's number never
    // change and their system calls are thread-safe; `timer`, `baseWaitSet`,
    // `events` and `readyList` are the loop thread's alone.

    let wakeUpSignal: WakeUpSignal
    /// Set by the first `wakeUp()` after the loop last drained its eventfd,
    /// so that a burst of wake-ups costs one write (coalesced wake-ups).
    let wakeUpPending = Atomic<Bool>(false)
    /// True while the loop sleeps in step 8 (S-RUN-7).
    let waiting = Atomic<Bool>(false)
    private let timerFD: Int32
    // Loop thread only; nil once closed.
    private var timer: WakeUpTimer?
    // Loop thread only; nil once closed.
    private var baseWaitSet: WaitSet?
    private let events: UnsafeMutablePointer<epoll_event>
    private static let eventCapacity: Int32 = 64
    /// Socket sources that may have input (loop thread only).
    // @exclusivity(unchecked): the loop thread's alone, touched on every
    // pass and socket event; no two accesses overlap.
    // U-READY-LIST (docs/unsafe-sites.md).
    @exclusivity(unchecked) var readyList = ReadyList()

    init() throws(RunLoopError) {
        wakeUpSignal = try WakeUpSignal()
        let timer = try WakeUpTimer()
        let waitSet = try WaitSet()
        try waitSet.add(wakeUpSignal.fileDescriptor, token: WaitSet.wakeUpToken, edgeTriggered: false)
        try waitSet.add(timer.fileDescriptor, token: WaitSet.timerToken, edgeTriggered: false)
        self.timer = timer
        timerFD = timer.fileDescriptor
        baseWaitSet = waitSet
        events = .allocate(capacity: Int(Self.eventCapacity))
    }

    deinit { events.deallocate() }

    /// Any thread; never blocks. Until the loop has woken, further calls
    /// cost one atomic exchange.
    @inline(__always)
    func wakeUp() {
        if !wakeUpPending.exchange(true, ordering: .acquiringAndReleasing) {
            wakeUpSignal.signal()
        }
    }

    /// Forgets a wake-up signalled while the loop was awake, before a run
    /// begins: that run's first pass does whatever it asked, so its eventfd
    /// would only end the run's first sleep at once, for nothing (S-RUN-7).
    /// Returns whether there was one. Loop thread; one load when none.
    @inline(__always)
    func forgetEarlierWakeUp() -> Bool {
        guard _slowPath(wakeUpPending.load(ordering: .relaxed)), timer != nil else { return false }
        return drainEarlierWakeUp()
    }

    @inline(never)
    private func drainEarlierWakeUp() -> Bool {
        // Acquiring: what the waker did before its wakeUp() is seen by the pass.
        guard wakeUpPending.exchange(false, ordering: .acquiringAndReleasing) else { return false }
        wakeUpSignal.drain()
        return true
    }

    /// Registers a socket source's fd in a mode's wait set, making the set
    /// with the mode's first socket source. Under the loop's lock, from any
    /// thread; the loop is alive (its fds are closed only after it is
    /// marked torn down). epoll_ctl is thread-safe, so a sleeping loop
    /// listens to the fd at once.
    func register(_ fd: Int32, token: UInt64, edgeTriggered: Bool, in modeWaitSet: inout WaitSet?) throws(RunLoopError) {
        let waitSet: WaitSet
        if let existing = modeWaitSet {
            waitSet = existing
        } else {
            waitSet = try makeModeWaitSet()
            modeWaitSet = waitSet
        }
        try waitSet.add(fd, token: token, edgeTriggered: edgeTriggered)
    }

    /// Takes a socket source's fd out of a mode's wait set (under the loop's lock).
    static func unregister(_ fd: Int32, from modeWaitSet: WaitSet?) {
        modeWaitSet?.remove(fd)
    }

    /// A wait set for a mode's socket sources, holding the loop's own
    /// eventfd and timerfd too.
    private func makeModeWaitSet() throws(RunLoopError) -> WaitSet {
        let waitSet = try WaitSet()
        try waitSet.add(wakeUpSignal.fileDescriptor, token: WaitSet.wakeUpToken, edgeTriggered: false)
        try waitSet.add(timerFD, token: WaitSet.timerToken, edgeTriggered: false)
        return waitSet
    }

    /// Step 8: one epoll_wait on the mode's wait set (the base set for a
    /// mode without socket sources), blocking or only looking. When it
    /// blocks, the timerfd is armed for `wakeInstant` (CLOCK_MONOTONIC
    /// nanoseconds; `MonotonicClock.never` for none). Each socket token
    /// that epoll reports is given to `socketReady`.
    func wait(in modeWaitSet: WaitSet?, wakeInstant: UInt64, block: Bool, socketReady: (UInt64) -> Void) {
        guard let waitSet = modeWaitSet ?? baseWaitSet, let timer else { return }
        if block {
            timer.arm(wakeInstant)
            waiting.store(true, ordering: .releasing)
        }
        let count = waitSet.wait(into: events, capacity: Self.eventCapacity, block: block)
        if block { waiting.store(false, ordering: .releasing) }
        for index in 0..<count {
            // Hinted, not a switch: a socket's wake-up is the common one,
            // and its code stays together (docs/performance.md, "Over tcp").
            let token = events[index].data.u64
            if _slowPath(token == WaitSet.wakeUpToken) {
                wakeUpSignal.drain()
                wakeUpPending.store(false, ordering: .releasing)
            } else if _slowPath(token == WaitSet.timerToken) {
                timer.drain()
            } else {
                socketReady(token)
            }
        }
    }

    /// Closes the timerfd and the base wait set, and keeps the eventfd
    /// quiet: a torn-down loop is never woken again, and its eventfd stays
    /// open as long as the loop object, so that a late `wakeUp()` never
    /// writes into a reused fd number (S-THR-3). Loop thread, at teardown.
    func close() {
        wakeUpPending.store(true, ordering: .releasing)
        readyList.removeAll()
        baseWaitSet = nil
        timer = nil
    }
}
