// A LoopThread as an actor's serial executor: S-EXEC-1. Actors here pin
// themselves to a LoopThread made for the test; each test checks where and
// in what order their jobs ran, what a nested run may run, what stop does
// with queued jobs, and that assumeIsolated holds on the thread and traps
// off it (exit tests, which run in a child process).
import Dispatch
import Glibc
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

/// An actor whose jobs run on `worker`'s thread.
actor PinnedRecorder {
    let worker: LoopThread
    nonisolated var unownedExecutor: UnownedSerialExecutor { worker.asUnownedSerialExecutor() }
    private(set) var events: [String] = []
    /// The same, readable without a job (once the thread stopped, say).
    nonisolated let log = Locked<[String]>([])

    init(on worker: LoopThread) { self.worker = worker }

    /// Records `event`; returns the name of the thread it ran on.
    @discardableResult
    func record(_ event: String) -> String? {
        events.append(event)
        log.withLock { $0.append(event) }
        return LoopThread.currentName
    }

    /// Records `name a` and starts a task isolated to this actor that
    /// records `name b`: its first job is queued on this executor from
    /// inside this job.
    func twoSteps(_ name: String) {
        record("\(name) a")
        Task { self.record("\(name) b") }
    }

    /// Runs the loop nested in the default mode, recording around it,
    /// until `done` says so (checked every 10 ms); `began` is told first.
    func runNested(began: @Sendable () -> Void, until done: @Sendable () -> Bool) {
        events.append("nested begins")
        began()
        let limit = Date() + 10
        while !done() && Date() < limit { _ = RunLoop.current.run(mode: .default, seconds: 0.01) }
        // A little longer: a job that could run here would have.
        _ = RunLoop.current.run(mode: .default, seconds: 0.1)
        events.append("nested ends")
    }
}

/// A global actor bound to a LoopThread: every `@WorkerActor` function runs there.
@globalActor
actor WorkerActor {
    static let thread: LoopThread = {
        let thread = LoopThread(name: "exec-global")
        try! thread.start()
        return thread
    }()
    static let shared = WorkerActor()
    nonisolated var unownedExecutor: UnownedSerialExecutor { Self.thread.asUnownedSerialExecutor() }
}

@WorkerActor func threadOfGlobalActor() -> String? { LoopThread.currentName }

/// Collects the kinds of the callouts a loop reports.
final class CalloutKinds: RunLoopMonitor {
    let kinds = Locked<[RunLoop.CalloutKind]>([])
    func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) { kinds.withLock { $0.append(callout.kind) } }
}

@Suite("LoopThread as a serial executor (S-EXEC-1)", .blocksThreads)
struct ExecutorTests {
    /// What an exit test does off the thread (synchronous: assumeIsolated
    /// is not offered to async code).
    static func assumeIsolation(of recorder: PinnedRecorder) {
        _ = recorder.assumeIsolated { $0.events.count }
    }

    /// A started LoopThread named `name` and an actor pinned to it.
    static func startedRecorder(_ name: String) throws -> (LoopThread, PinnedRecorder) {
        let worker = LoopThread(name: name)
        try worker.start()
        return (worker, PinnedRecorder(on: worker))
    }

    /// How many blocks and jobs wait in `worker`'s loop.
    static func queued(on worker: LoopThread) -> Int {
        worker.runLoop?.pendingBlockCount.load(ordering: .acquiring) ?? -1
    }

    /// Waits (120 s at most: a safety net) until `count` blocks and jobs
    /// wait on `worker`, without blocking a thread of the cooperative pool
    /// (the tasks that queue the jobs need one). Generous because those
    /// tasks wait for a pool thread that the suite's synchronous tests may
    /// hold: under ThreadSanitizer a full run once left one waiting more
    /// than 10 s (docs/contributing.md, "Tests and the test runner's
    /// threads").
    static func waitUntilQueued(_ count: Int, on worker: LoopThread) async -> Bool {
        let limit = Date() + 120
        while queued(on: worker) < count && Date() < limit { try? await Task.sleep(for: .milliseconds(1)) }
        return queued(on: worker) >= count
    }

    /// Waits for `semaphore` on a thread of its own, not the pool's.
    static func wait(for semaphore: DispatchSemaphore) async {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                semaphore.wait()
                continuation.resume()
            }
        }
    }

    @Test("S-EXEC-1: an actor pinned to a LoopThread runs only on that thread, one job at a time, from many tasks")
    func actorRunsOnItsThread() async throws {
        let (worker, recorder) = try Self.startedRecorder("exec-pin")
        defer { worker.stop() }
        let threads = await withTaskGroup(of: String?.self) { group in
            for index in 0..<200 { group.addTask { await recorder.record("\(index)") } }
            return await group.reduce(into: [String?]()) { $0.append($1) }
        }
        #expect(threads.count == 200)
        #expect(threads.allSatisfy { $0 == "exec-pin" })
        #expect(await recorder.events.count == 200)
        // A monitor sees the jobs as callouts of their own kind.
        let monitor = CalloutKinds()
        worker.runLoop?.monitor = monitor
        await recorder.record("monitored")
        // The report comes once the job's callout returned: a task queued
        // after it runs after that.
        try await worker.performAndAwait {}
        #expect(monitor.kinds.value.contains(.job))
        #expect(await threadOfGlobalActor() == "exec-global")
    }

    @Test("S-EXEC-1: jobs and perform blocks run in the order they were queued, whatever the jobs' priorities")
    func jobsRunInEnqueueOrder() async throws {
        let (worker, recorder) = try Self.startedRecorder("exec-order")
        defer { worker.stop() }
        let order = Locked<[String]>([])
        // Hold the loop so that everything below queues behind this block.
        let (held, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        try worker.perform { held.signal(); release.wait() }
        await Self.wait(for: held)
        var tasks: [Task<Void, Never>] = []
        for index in 0..<12 {
            let priority: TaskPriority = index % 3 == 0 ? .high : (index % 3 == 1 ? .low : .medium)
            tasks.append(Task(priority: priority) { await recorder.record("job \(index)") })
            // Its job is queued before the next one is made.
            #expect(await Self.waitUntilQueued(2 * index + 1, on: worker), "job \(index) was not queued")
            try worker.perform { order.withLock { $0.append("block \(index)") } }
        }
        release.signal()
        for task in tasks { await task.value }
        let jobs = await recorder.events
        #expect(jobs == (0..<12).map { "job \($0)" })
        // Blocks and jobs interleaved: each block ran after the job queued before it.
        let blocks = try await worker.performAndAwait { order.value }
        #expect(blocks == (0..<12).map { "block \($0)" })
    }

    @Test("S-EXEC-1: a run nested in a job runs no other job of the executor; the queued job starts once the first returns")
    func nestedRunRunsNoOtherJob() async throws {
        let (worker, recorder) = try Self.startedRecorder("exec-nest")
        defer { worker.stop() }
        let nesting = DispatchSemaphore(value: 0)
        let second = Task.detached {
            // Queued while the first job runs the loop nested.
            await Self.wait(for: nesting)
            await recorder.record("second job")
        }
        await recorder.runNested(began: { nesting.signal() }, until: { Self.queued(on: worker) >= 1 })
        await second.value
        #expect(await recorder.events == ["nested begins", "nested ends", "second job"])
    }

    @Test("S-EXEC-1: a job whose nested run cannot run a queued job of its executor is warned about once, naming the thread")
    func blockedJobIsWarnedAbout() async throws {
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "exec-warn")
            try worker.start()
            let recorder = PinnedRecorder(on: worker)
            let nesting = DispatchSemaphore(value: 0)
            let second = Task.detached {
                await ExecutorTests.wait(for: nesting)
                await recorder.record("second job")
            }
            await recorder.runNested(began: { nesting.signal() }, until: { ExecutorTests.queued(on: worker) >= 1 })
            await second.value
            worker.stop()
        }
        let output = String(decoding: result.standardErrorContent, as: UTF8.self)
        #expect(output.components(separatedBy: "LoopThread 'exec-warn': a job of its executor is queued while another job of it runs the loop nested").count == 2,
                "expected the warning once: \(output)")
    }

    @Test("S-EXEC-1: jobs wait for the executor's modes, keep such a mode from being empty, and count as a handled source")
    func jobsKeepTheirModes() async throws {
        let worker = LoopThread(name: "exec-modes")
        let only = RunLoop.Mode("S-EXEC-1.jobs")
        worker.executorModes = [only]
        #expect(worker.executorModes == [only])
        try worker.start()
        defer { worker.stop() }
        let recorder = PinnedRecorder(on: worker)
        let job = Task { await recorder.record("in its mode") }
        #expect(await Self.waitUntilQueued(1, on: worker))
        // The thread's own runs (the default mode) leave it queued.
        try await Task.sleep(for: .milliseconds(100))
        #expect(Self.queued(on: worker) == 1)
        // A run of its mode, which has no source or timer, is not empty:
        // it runs the job and returns as having handled a source.
        let result = try await worker.performAndAwait { RunLoop.current.run(mode: only, seconds: 5, returnAfterSourceHandled: true) }
        #expect(result == .handledSource)
        #expect(await job.value == "exec-modes")
    }

    @Test("S-EXEC-1: assumeIsolated succeeds from a perform block and a timer on the thread")
    func assumeIsolatedOnTheThread() async throws {
        let (worker, recorder) = try Self.startedRecorder("exec-assume")
        defer { worker.stop() }
        await recorder.record("before")
        let fromBlock = try await worker.performAndAwait { recorder.assumeIsolated { $0.events.count } }
        #expect(fromBlock == 1)
        let fromTimer = await withCheckedContinuation { continuation in
            try! worker.perform {
                _ = try! RunLoop.current.scheduledTimer(withTimeInterval: 0.01, repeats: false) { _ in
                    continuation.resume(returning: recorder.assumeIsolated { $0.events.count })
                }
            }
        }
        #expect(fromTimer == 1)
    }

    @Test("S-EXEC-1: assumeIsolated off the thread traps (the runtime asks isIsolatingCurrentContext, which says no)")
    func assumeIsolatedElsewhereTraps() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "exec-trap")
            try worker.start()
            ExecutorTests.assumeIsolation(of: PinnedRecorder(on: worker))
        }
        #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("Incorrect actor executor assumption"))
    }

    @Test("S-EXEC-1: checkIsolated, which older runtimes ask instead, traps off the thread naming it, and passes on it")
    func checkIsolatedNamesTheThread() async throws {
        let worker = LoopThread(name: "exec-check")
        try worker.start()
        defer { worker.stop() }
        #expect(worker.isIsolatingCurrentContext() == false)
        #expect(try await worker.performAndAwait { worker.checkIsolated(); return worker.isIsolatingCurrentContext() } == true)
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "exec-check")
            try worker.start()
            worker.checkIsolated()
        }
        #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("not on LoopThread 'exec-check'"))
    }

    @Test("S-EXEC-1: stop() discards queued blocks but runs every queued job, and the jobs they queue")
    func stopRunsQueuedJobs() async throws {
        let worker = LoopThread(name: "exec-stop")
        try worker.start()
        let recorder = PinnedRecorder(on: worker)
        let (held, release) = (DispatchSemaphore(value: 0), DispatchSemaphore(value: 0))
        try worker.perform { held.signal(); release.wait() }
        await Self.wait(for: held)
        let discarded = Locked(false)
        var jobs: [Task<String?, Never>] = []
        for index in 0..<5 {
            jobs.append(Task { await recorder.record("job \(index)") })
            #expect(await Self.waitUntilQueued(2 * index + 1, on: worker))
            try worker.perform { discarded.withLock { $0 = true } }
        }
        // A job that queues another as it runs, at the thread's end.
        let yielding = Task { await recorder.twoSteps("yielding") }
        #expect(await Self.waitUntilQueued(11, on: worker))
        // Stop from another thread (it joins), then let the held block end
        // once the stop has begun (the thread no longer running): a block
        // released before would let the loop run the queued blocks, however
        // late the detached task starts on a loaded pool.
        let stopped = Task.detached { worker.stop() }
        let limit = Date() + 120
        while worker.isRunning && Date() < limit { try await Task.sleep(for: .milliseconds(1)) }
        #expect(!worker.isRunning, "stop() never began")
        release.signal()
        await stopped.value
        for job in jobs { #expect(await job.value == "exec-stop") }
        await yielding.value
        #expect(!discarded.value, "a block queued before stop() ran")
        // No job may be queued on the stopped thread: read the log as it is.
        #expect(recorder.log.value == (0..<5).map { "job \($0)" } + ["yielding a", "yielding b"])
    }

    @Test("S-EXEC-1: a job queued after the thread stopped traps, naming the LoopThread")
    func jobAfterStopTraps() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "exec-gone")
            try worker.start()
            let recorder = PinnedRecorder(on: worker)
            await recorder.record("before")
            worker.stop()
            await recorder.record("after")
        }
        #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("LoopThread 'exec-gone' was given a Swift concurrency job after it stopped"))
    }

    @Test("S-EXEC-1: a job queued before start() traps, saying to start the thread first")
    func jobBeforeStartTraps() async throws {
        let result = try await #require(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "exec-early")
            let recorder = PinnedRecorder(on: worker)
            await recorder.record("too early")
        }
        #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("before start(): start it"))
    }

    @Test("S-EXEC-2: withTaskExecutorPreference(worker) runs nonisolated async code on the thread, also after it suspends; an actor pinned to the thread runs its jobs as serial jobs beside it")
    func taskExecutorPreference() async throws {
        let (worker, recorder) = try Self.startedRecorder("exec-task")
        defer { worker.stop() }
        let monitor = CalloutKinds()
        worker.runLoop?.monitor = monitor
        let (before, after, actorThread) = await withTaskExecutorPreference(worker) {
            let before = LoopThread.currentName
            try? await Task.sleep(for: .milliseconds(5))
            let after = LoopThread.currentName
            // A serial job of the pinned actor, from a task that prefers the thread.
            let actorThread = await recorder.record("from the preferring task")
            return (before, after, actorThread)
        }
        #expect(before == "exec-task")
        #expect(after == "exec-task")
        #expect(actorThread == "exec-task")
        try await worker.performAndAwait {}
        #expect(monitor.kinds.value.contains(.job))
        // Off the preference, the same code runs elsewhere.
        #expect(await Self.nonisolatedThreadName() == nil)
    }

    /// Nonisolated async code: where it runs depends on the task's preference.
    nonisolated static func nonisolatedThreadName() async -> String? { LoopThread.currentName }
}
