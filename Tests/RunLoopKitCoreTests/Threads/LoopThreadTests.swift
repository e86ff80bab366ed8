// LoopThread: the named keep-alive thread (S-KEEP-1, S-THR-5, S-BLK-2).
import CLinuxSupport
import Dispatch
import Glibc
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("LoopThread (S-KEEP-1)", .blocksThreads)
struct LoopThreadTests {
    @Test("S-KEEP-1, S-THR-5: the thread carries its name at the OS level and in its loop")
    func threadIsNamed() throws {
        let worker = LoopThread(name: "lt-named")
        try worker.start()
        defer { worker.stop() }
        let tid = try #require(worker.threadID)
        #expect(ProcessProbe.kernelThreadName(tid) == "lt-named")
        #expect(worker.runLoop?.threadName == "lt-named")
        let seen = try worker.performAndWait { (LoopThread.currentName, rlk_gettid()) }
        #expect(seen.0 == "lt-named")
        #expect(seen.1 == tid)
        let plainThreadName = try SpawnedThread<String?>(named: "lt-plain") { LoopThread.currentName }.join()
        #expect(plainThreadName == nil, "a plain thread is not a LoopThread")
    }

    @Test("S-THR-5: a long name is cut to Linux's 15 bytes at the OS level, on a character boundary")
    func longNameIsCut() throws {
        let name = "lt-ééééééé-long-name"  // "lt-" + 7 two-byte characters = 17 bytes
        let worker = LoopThread(name: name)
        try worker.start()
        defer { worker.stop() }
        let tid = try #require(worker.threadID)
        #expect(ProcessProbe.kernelThreadName(tid) == "lt-éééééé")
        #expect(worker.name == name)
        #expect(try worker.performAndWait { LoopThread.currentName } == name)
    }

    @Test("S-KEEP-1: start() returns once the loop is ready to take tasks")
    func startReturnsWhenReady() throws {
        let worker = LoopThread(name: "lt-ready")
        #expect(!worker.isRunning && worker.runLoop == nil && worker.threadID == nil)
        #expect(throws: RunLoopError.notStarted(threadName: "lt-ready")) { try worker.perform {} }
        try worker.start()
        defer { worker.stop() }
        #expect(worker.isRunning)
        let loop = try #require(worker.runLoop)
        #expect(loop.isLoopThreadLoop)
        let tid = try #require(worker.threadID)
        #expect(ProcessProbe.threadExists(tid))
        // The very first task, queued the moment start() returned, runs.
        let ran = DispatchSemaphore(value: 0)
        try worker.perform { ran.signal() }
        #expect(waitFor(ran))
    }

    @Test("S-KEEP-1: tasks from several threads all run on the LoopThread, each thread's in order")
    func tasksFromAnyThread() throws {
        let worker = LoopThread(name: "lt-any")
        try worker.start()
        defer { worker.stop() }
        let tid = try #require(worker.threadID)
        let seen = Locked<[(producer: Int, index: Int, tid: Int32)]>([])
        let producers = (0..<4).map { producer in
            SpawnedThread<Void>(named: "lt-prod\(producer)") {
                for index in 0..<500 {
                    if index % 2 == 0 {
                        try worker.perform { seen.withLock { $0.append((producer, index, rlk_gettid())) } }
                    } else {
                        try worker.perform(waitUntilDone: false) { seen.withLock { $0.append((producer, index, rlk_gettid())) } }
                    }
                }
            }
        }
        for producer in producers { try producer.join() }
        try worker.performAndWait {}
        let recorded = seen.value
        #expect(recorded.count == 2_000)
        #expect(recorded.allSatisfy { $0.tid == tid })
        for producer in 0..<4 {
            #expect(recorded.filter { $0.producer == producer }.map(\.index) == Array(0..<500))
        }
    }

    @Test("S-KEEP-1, S-BLK-2: performAndWait and perform(waitUntilDone:) return the result or rethrow the error")
    func performAndWaitResults() throws {
        let worker = LoopThread(name: "lt-wait")
        try worker.start()
        defer { worker.stop() }
        #expect(try worker.performAndWait { "on \(LoopThread.currentName ?? "?")" } == "on lt-wait")
        #expect(throws: ProbeError(code: 1)) { try worker.performAndWait { () throws -> Int in throw ProbeError(code: 1) } }
        let ran = Locked(false)
        try worker.perform(waitUntilDone: true) { ran.value = true }
        #expect(ran.value, "perform(waitUntilDone: true) returned before the task ran")
        #expect(throws: ProbeError(code: 2)) { try worker.perform(waitUntilDone: true) { throw ProbeError(code: 2) } }
        // The loop survives a task that threw.
        #expect(try worker.performAndWait { 5 } == 5)
    }

    @Test("S-KEEP-1, S-BLK-2: performAndAwait returns the result or throws the error, from async code")
    func performAndAwait() async throws {
        let worker = LoopThread(name: "lt-await")
        try worker.start()
        defer { worker.stop() }
        let tid = try #require(worker.threadID)
        #expect(try await worker.performAndAwait { rlk_gettid() } == tid)
        await #expect(throws: ProbeError(code: 3)) {
            try await worker.performAndAwait { () throws -> Int in throw ProbeError(code: 3) }
        }
        worker.stop()
        await #expect(throws: RunLoopError.loopGone(threadName: "lt-await")) {
            try await worker.performAndAwait { 1 }
        }
    }

    @Test("S-KEEP-1, S-RUN-4: stop() lets the task in progress finish, discards the queued ones, ends the loop and joins")
    func stopFinishesCurrentTask() throws {
        let worker = LoopThread(name: "lt-stop")
        try worker.start()
        let loop = try #require(worker.runLoop)
        let tid = try #require(worker.threadID)
        // Set up so that the task in progress runs in the first block drain of
        // a pass (step 4 of S-RUN-2) and the queued task waits for the second
        // (step 10): after a stop, that second drain must not start it.
        let armed = Locked(false)
        let asleep = DispatchSemaphore(value: 0)
        loop.add(RunLoopObserver(activities: .beforeWaiting) { _, _ in
            if armed.withLock({ let was = $0; $0 = false; return was }) { asleep.signal() }
        }, forMode: .default)
        try worker.performAndWait { armed.value = true }
        #expect(waitFor(asleep))
        let preStarted = DispatchSemaphore(value: 0), go = DispatchSemaphore(value: 0)
        try worker.perform {
            preStarted.signal()
            _ = waitFor(go)
        }
        #expect(waitFor(preStarted))
        let started = DispatchSemaphore(value: 0)
        let events = Locked<[String]>([])
        try worker.perform {
            started.signal()
            // Still running when stop() is called: it returns only once the stop was requested.
            let deadline = monotonicNow() + 10_000 * nanosecondsPerMillisecond
            while !loop.stopRequested.load(ordering: .acquiring) && monotonicNow() < deadline { sched_yield() }
            events.withLock { $0.append("task in progress finished") }
        }
        try worker.perform { events.withLock { $0.append("queued task ran") } }
        go.signal()
        #expect(waitFor(started))
        worker.stop()
        events.withLock { $0.append("stop returned") }
        #expect(events.value == ["task in progress finished", "stop returned"])
        #expect(!worker.isRunning && worker.runLoop == nil)
        #expect(ProcessProbe.threadGone(tid), "stop() returned before the thread was joined")
        #expect(throws: RunLoopError.loopGone(threadName: "lt-stop")) { try worker.perform {} }
    }

    @Test("S-KEEP-1: a performAndWait waiting when stop() discards its task gets .stopped, no hang")
    func stopAnswersWaiters() throws {
        let worker = LoopThread(name: "lt-waiters")
        try worker.start()
        let loop = try #require(worker.runLoop)
        let started = DispatchSemaphore(value: 0)
        try worker.perform {
            started.signal()
            // Busy until stop() is called, so that the waiter's task is still queued then.
            let deadline = monotonicNow() + 10_000 * nanosecondsPerMillisecond
            while !loop.stopRequested.load(ordering: .acquiring) && monotonicNow() < deadline { sched_yield() }
        }
        #expect(waitFor(started))
        let waiter = SpawnedThread<RunLoopError?>(named: "lt-waiter") {
            do {
                try worker.performAndWait {}
                return nil
            } catch let error as RunLoopError {
                return error
            }
        }
        // Stop only once the waiter's task is queued behind the busy one.
        while !loop.hasBlocks(for: .default, isCommon: true) { sched_yield() }
        worker.stop()
        #expect(try waiter.join() == .loopGone(threadName: "lt-waiters"))
    }

    @Test("S-KEEP-1: stopAfterDraining() runs what is already queued, then stops")
    func stopAfterDraining() throws {
        let worker = LoopThread(name: "lt-drain")
        try worker.start()
        let tid = try #require(worker.threadID)
        let started = DispatchSemaphore(value: 0)
        let ran = Locked<[Int]>([])
        try worker.perform {
            started.signal()
            blockThread(milliseconds: 50)
            ran.withLock { $0.append(0) }
        }
        for index in 1...100 { try worker.perform { ran.withLock { $0.append(index) } } }
        #expect(waitFor(started))
        worker.stopAfterDraining()
        #expect(ran.value == Array(0...100))
        #expect(ProcessProbe.threadGone(tid))
        #expect(throws: RunLoopError.loopGone(threadName: "lt-drain")) { try worker.perform {} }
    }

    @Test("S-KEEP-1: stop is idempotent, also from several threads at once")
    func stopIsIdempotent() throws {
        let worker = LoopThread(name: "lt-idem")
        try worker.start()
        let tid = try #require(worker.threadID)
        let stoppers = (0..<4).map { index in
            SpawnedThread<Void>(named: "lt-stopper\(index)") { worker.stop() }
        }
        for stopper in stoppers { try stopper.join() }
        worker.stop()
        worker.stopAfterDraining()
        #expect(!worker.isRunning)
        #expect(ProcessProbe.threadGone(tid))

        let neverStarted = LoopThread(name: "lt-never")
        neverStarted.stop()
        neverStarted.stop()
        #expect(!neverStarted.isRunning)
    }

    @Test("S-KEEP-1: stop() called from a task on the thread itself returns at once; the thread ends after that task")
    func stopFromOwnThread() throws {
        let worker = LoopThread(name: "lt-self")
        try worker.start()
        let tid = try #require(worker.threadID)
        let events = Locked<[String]>([])
        try worker.performAndWait {
            worker.stop()
            events.withLock { $0.append("stop returned inside the task") }
        }
        try? worker.perform { events.withLock { $0.append("task after stop ran") } }
        worker.stop()  // from outside: joins
        #expect(events.value == ["stop returned inside the task"])
        #expect(ProcessProbe.threadGone(tid))
    }

    @Test("S-KEEP-1: the loop keeps running between tasks: 200 tasks, one at a time, all run")
    func keepsRunningBetweenTasks() throws {
        let worker = LoopThread(name: "lt-alive")
        try worker.start()
        defer { worker.stop() }
        // The opposite of the classic run(mode:before:) thread, which exits after one perform (S-BLK-5).
        for index in 0..<200 {
            #expect(try worker.performAndWait { index } == index)
        }
        #expect(worker.isRunning)
        #expect(worker.runLoop?.currentMode == .default)
    }
}
