// Keeping a thread alive: S-KEEP-2 (no retain cycle, dropping the handle
// stops the thread) and S-KEEP-3 (the classic leak experiment).
import CLinuxSupport
import Dispatch
import Glibc
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Synchronization
import Testing

@Suite("Keep-alive threads (S-KEEP)", .blocksThreads)
struct KeepAliveTests {
    /// What the classic iOS example's view controller was: an object that owns a keep-alive
    /// thread and submits tasks that capture itself strongly.
    final class Owner: Sendable {
        let worker: LoopThread
        let work = Locked(0)

        init(name: String) throws {
            worker = LoopThread(name: name)
            try worker.start()
        }

        func doWork() { work.withLock { $0 += 1 } }

        /// A task that captures `self` strongly: the classic retain cycle with NSThread.
        func submitWork() throws {
            try worker.performAndWait { self.doWork() }
        }
    }

    final class Payload: Sendable {
        let ran = Locked(false)
    }

    @Test("S-KEEP-2: dropping the last reference to a LoopThread stops its thread and frees its loop")
    func droppingTheHandleStopsTheThread() throws {
        var worker: LoopThread? = LoopThread(name: "ka-drop")
        try worker!.start()
        let tid = try #require(worker!.threadID)
        weak let weakLoop = worker!.runLoop
        #expect(try worker!.performAndWait { 1 } == 1)
        #expect(ProcessProbe.threadExists(tid))
        worker = nil  // deinit stops and joins, on this thread
        #expect(ProcessProbe.threadGone(tid), "the thread outlived its last handle")
        #expect(weakLoop == nil, "the loop outlived its thread")
    }

    @Test("S-KEEP-2: after running a task, the thread holds no reference to what the task captured")
    func taskCapturesAreReleased() throws {
        let worker = LoopThread(name: "ka-weak")
        try worker.start()
        defer { worker.stop() }
        var payload: Payload? = Payload()
        weak let weakPayload = payload
        let strong = payload!
        try worker.perform { strong.ran.value = true }
        payload = nil
        _ = consume strong
        // A later task is a barrier: the first one has run, and its closure is gone.
        try worker.performAndWait {}
        #expect(weakPayload == nil, "the LoopThread kept the task's captures alive")
    }

    @Test("S-KEEP-2: an owner whose tasks capture it strongly is freed, and its thread stops, when dropped")
    func noRetainCycleThroughTasks() throws {
        var owner: Owner? = try Owner(name: "ka-owner")
        weak let weakOwner = owner
        try owner!.submitWork()
        try owner!.submitWork()
        #expect(owner!.work.value == 2)
        let tid = try #require(owner!.worker.threadID)
        // A barrier that does not capture the owner: the self-capturing tasks
        // have been released by the time it runs.
        try owner!.worker.performAndWait {}
        owner = nil  // Owner.deinit -> LoopThread.deinit -> stop and join, on this thread
        #expect(weakOwner == nil, "the owner was kept alive by its own thread (retain cycle)")
        #expect(ProcessProbe.threadGone(tid), "the owner's thread outlived it")
    }

    @Test("S-KEEP-2: an owner whose last reference is its own task is freed on its thread, which then ends cleanly")
    func ownerReleasedByItsOwnTask() throws {
        var owner: Owner? = try Owner(name: "ka-dangling")
        weak let weakOwner = owner
        let loop = try #require(owner!.worker.runLoop)
        let tid = try #require(owner!.worker.threadID)
        let exited = DispatchSemaphore(value: 0)
        loop.add(RunLoopObserver(activities: .exit) { _, _ in exited.signal() }, forMode: .default)
        let release = DispatchSemaphore(value: 0)
        try owner!.worker.perform { [owner] in
            _ = waitFor(release)
            owner!.doWork()
        }
        owner = nil  // now only the queued task holds the owner, and through it the LoopThread
        release.signal()
        // The task's closure is released on the loop thread: Owner.deinit and
        // LoopThread.deinit run there, and the thread ends after that task.
        #expect(waitFor(exited), "the thread's loop did not end after its owner went away")
        #expect(ProcessProbe.threadGone(tid, within: 10), "the thread outlived its owner")
        #expect(weakOwner == nil)
        #expect(loop.hasThreadExited)
    }

    // MARK: - S-KEEP-3

    /// Threads started and stopped after the warm-up (docs/semantics.md, S-KEEP-3, asks for
    /// 100,000; this size takes seconds; Examples/keepalive-churn runs more).
    static let churnCount = 2_000
    static let warmUpCount = 100
    /// Allowed RSS growth over the churn, after the warm-up.
    static let rssAllowance = 4 << 20

    @Test("S-KEEP-3: start and stop 2,000 LoopThreads in a row: fds, loops and memory return to their start")
    func leakExperiment() async throws {
        // In a child process (an exit test), so that no test running in
        // parallel opens fds or makes loops while this one counts them.
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            KeepAliveTests.churnAndMeasure()
        }
        let output = String(decoding: try #require(result).standardErrorContent, as: UTF8.self)
        let line = try #require(output.split(separator: "\n").last { $0.hasPrefix("S-KEEP-3 ") }, "no report in: \(output)")
        var numbers: [String: Int] = [:]
        for field in line.dropFirst("S-KEEP-3 ".count).split(separator: " ") {
            let parts = field.split(separator: "=")
            if parts.count == 2, let value = Int(parts[1]) { numbers[String(parts[0])] = value }
        }
        let report = Comment(rawValue: String(line))
        #expect(numbers["tasks"] == Self.warmUpCount + Self.churnCount, report)
        #expect(numbers["fdEnd"] != nil && numbers["fdEnd"] == numbers["fdStart"], report)
        #expect(numbers["loopsEnd"] != nil && numbers["loopsEnd"] == numbers["loopsStart"], report)
        // The RSS part only without a sanitizer: ThreadSanitizer keeps
        // shadow and history memory of its own, and AddressSanitizer's
        // quarantine holds every freed block back from reuse (up to 256 MB),
        // so RSS grows by tens of MB over the churn with nothing leaked. The
        // fd and loop counts above still hold, and under AddressSanitizer
        // LeakSanitizer checks the child at its exit.
        if let sanitizer = numbers["tsan"] == 1 ? "ThreadSanitizer" : numbers["asan"] == 1 ? "AddressSanitizer" : nil {
            print("S-KEEP-3: RSS growth not checked under \(sanitizer), whose own memory distorts it (fds and loops were). \(report)")
        } else {
            let growth = try #require(numbers["rssEnd"]) - (try #require(numbers["rssStart"]))
            #expect(growth <= Self.rssAllowance, "RSS grew by \(growth) bytes over the churn. \(report)")
        }
    }

    /// The experiment itself, in the child process: prints one report line on stderr.
    static func churnAndMeasure() {
        let tasks = Atomic<Int>(0)
        func cycle(_ index: Int) {
            let worker = LoopThread(name: "ka-churn-\(index % 100)")
            do {
                try worker.start()
                let echoed = try worker.performAndWait { index }
                if echoed == index { tasks.wrappingAdd(1, ordering: .relaxed) }
            } catch {
                writeToStandardError("S-KEEP-3 failed at thread \(index): \(error)\n")
                exit(2)
            }
            worker.stop()
        }
        let loopsStart = RunLoop.liveCount.load(ordering: .relaxed)
        let fdBeforeWarmUp = ProcessProbe.openFileDescriptorCount()
        // The warm-up also lets the child's own lazy setup (libdispatch's
        // epoll, eventfd and timerfd, the test harness's pipes) finish, so
        // that the fd count at the start of the churn is stable.
        for index in 0..<warmUpCount { cycle(index) }
        let rssStart = ProcessProbe.residentBytes()
        let fdStart = ProcessProbe.openFileDescriptorCount()
        for index in 0..<churnCount { cycle(index) }
        let rssEnd = ProcessProbe.residentBytes()
        let fdEnd = ProcessProbe.openFileDescriptorCount()
        let loopsEnd = RunLoop.liveCount.load(ordering: .relaxed)
        let tsan = ProcessProbe.isUnderThreadSanitizer ? 1 : 0
        let asan = ProcessProbe.isUnderAddressSanitizer ? 1 : 0
        writeToStandardError(
            "S-KEEP-3 tasks=\(tasks.load(ordering: .relaxed)) fdStart=\(fdStart) fdEnd=\(fdEnd) fdBeforeWarmUp=\(fdBeforeWarmUp) "
                + "loopsStart=\(loopsStart) loopsEnd=\(loopsEnd) rssStart=\(rssStart) rssEnd=\(rssEnd) tsan=\(tsan) asan=\(asan)\n")
    }
}
