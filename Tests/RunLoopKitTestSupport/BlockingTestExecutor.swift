// Why the tests do not run on Swift's cooperative pool: that pool has one
// thread per core (two on CI's machine) and expects every job to return
// soon, but RunLoopKit's tests block their threads by nature: they join
// the threads they spawn, wait for programs to exit, run loops and wait on
// semaphores. And the parent side of every exit test reads its child's
// pipes with blocking reads for the child's whole life. Two such waits
// held the whole pool, and every other test's awaits (timed ones above
// all) stood still for minutes under ThreadSanitizer. So each test's jobs
// run on an executor whose threads may block: a job that finds no idle
// thread gets a new one (docs/contributing.md, "Tests and threads").
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitCore
import Testing

/// A task executor of threads that may block: a job runs on an idle
/// thread, or waits for one. Jobs come in bursts (a task group's thousand
/// children), so threads are not made per job: the first few are made as
/// jobs come, and after that a watcher makes one when jobs wait and no
/// thread has taken one for `stallInterval` (every thread is blocked).
/// Threads are kept for the process's life, which is a test process's.
package final class BlockingTestExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: every field is a lock, a semaphore or a constant.

    /// The one executor of the test process.
    package static let shared = BlockingTestExecutor()

    private struct Queue {
        var jobs: [UnownedJob] = []
        var next = 0
        var idleThreads = 0
        var startingThreads = 0
        var threads = 0
        /// Jobs taken so far: the watcher's sign of progress.
        var taken = 0
        var waiting: Int { jobs.count - next }

        /// Counts a thread about to start.
        mutating func startingThread() -> Action {
            startingThreads += 1
            threads += 1
            return .startThread
        }
    }

    private enum Action { case none, wakeIdleThread, startThread }

    private let queue = Locked(Queue())
    /// Signalled once for each idle thread woken to take a job.
    private let jobWaiting = DispatchSemaphore(value: 0)
    private static let stallInterval: Double = 0.02
    /// Threads made as jobs come, before the watcher decides: twice the
    /// cores of CI's machine, as many as Swift Testing runs tests at once.
    private static let threadsStartedAtOnce = 4

    private init() {
        _ = SpawnedThread(named: "rlk-test-watch") { [self] in watchForStalls() }
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let action: Action = queue.withLock { queue in
            queue.jobs.append(job)
            if queue.idleThreads > 0 {
                queue.idleThreads -= 1
                return .wakeIdleThread
            }
            let starts = queue.startingThreads == 0 && queue.threads < Self.threadsStartedAtOnce
            return starts ? queue.startingThread() : .none
        }
        switch action {
        case .none: break
        case .wakeIdleThread: jobWaiting.signal()
        case .startThread: startThread()
        }
    }

    package func asUnownedTaskExecutor() -> UnownedTaskExecutor {
        UnownedTaskExecutor(ordinary: self)
    }

    /// How many threads the executor has made so far.
    package var threadCount: Int { queue.withLock { $0.threads } }

    private func startThread() {
        _ = SpawnedThread(named: "rlk-test-job") { [self] in runJobs() }
    }

    /// A thread's life: takes jobs while there are some, then waits idle.
    private func runJobs() {
        queue.withLock { $0.startingThreads -= 1 }
        while true {
            let job: UnownedJob? = queue.withLock { queue in
                guard queue.waiting > 0 else {
                    queue.idleThreads += 1
                    return nil
                }
                let job = queue.jobs[queue.next]
                queue.next += 1
                queue.taken += 1
                if queue.waiting == 0 {
                    queue.jobs.removeAll(keepingCapacity: true)
                    queue.next = 0
                }
                return job
            }
            if let job {
                job.runSynchronously(on: asUnownedTaskExecutor())
            } else {
                jobWaiting.wait()
            }
        }
    }

    /// Starts a thread when jobs wait and none was taken for a while: the
    /// threads that have jobs are all blocked, perhaps on the waiting ones.
    private func watchForStalls() {
        var lastTaken = -1
        while true {
            usleep(UInt32(Self.stallInterval * 1_000_000))
            let start: Bool = queue.withLock { queue in
                defer { lastTaken = queue.taken }
                guard queue.waiting > 0, queue.taken == lastTaken,
                    queue.idleThreads == 0, queue.startingThreads == 0
                else { return false }
                _ = queue.startingThread()
                return true
            }
            if start { startThread() }
        }
    }
}

/// A suite's trait: its tests, and the tasks they make in groups and with
/// `async let`, run on `BlockingTestExecutor.shared`, never on Swift's
/// cooperative pool (the executor's file says why), and at most
/// `TestCaseGate.width` test cases run at once: the pool used to ration
/// them, and this version of swift-testing sets no limit of its own. Every
/// suite has it; `scripts/check-test-suites.sh` checks that.
package struct BlocksThreadsTrait: SuiteTrait, TestTrait, TestScoping {
    package var isRecursive: Bool { true }

    package func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        try await withTaskExecutorPreference(BlockingTestExecutor.shared) {
            // A suite's own scope holds no place: its test cases take them.
            guard testCase != nil else { return try await function() }
            await TestCaseGate.shared.enter()
            defer { TestCaseGate.shared.leave() }
            try await function()
        }
    }
}

/// Lets `width` test cases run at once, the others wait in order.
package final class TestCaseGate: Sendable {
    package static let shared = TestCaseGate(width: 2 * Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))

    private struct State {
        var running = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        var next = 0
    }

    package let width: Int
    private let state = Locked(State())

    init(width: Int) { self.width = max(width, 1) }

    package func enter() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let enters: Bool = state.withLock { state in
                guard state.running < width else {
                    state.waiting.append(continuation)
                    return false
                }
                state.running += 1
                return true
            }
            if enters { continuation.resume() }
        }
    }

    package func leave() {
        // The place passes to the first waiting test case, if any.
        let next: CheckedContinuation<Void, Never>? = state.withLock { state in
            guard state.next < state.waiting.count else {
                state.running -= 1
                return nil
            }
            let next = state.waiting[state.next]
            state.next += 1
            if state.next == state.waiting.count {
                state.waiting.removeAll(keepingCapacity: true)
                state.next = 0
            }
            return next
        }
        next?.resume()
    }
}

extension Trait where Self == BlocksThreadsTrait {
    /// The suite's tests block threads (joins, loops, semaphores, exit
    /// tests): run them on threads that may block.
    package static var blocksThreads: Self { Self() }
}
