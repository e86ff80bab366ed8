// Misuse (issue item 7): programming errors trap with a message (exit tests,
// which run in a child process); recoverable misuse throws a typed error or
// returns a documented result. Rules: S-THR-4, S-MODE-4, S-TMR-1, S-KEEP-1, S-BLK-2.
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Misuse errors", .blocksThreads)
struct MisuseTests {
    /// Checks that a trap's message (on the child's stderr) says what the bug is.
    private static func expectMessage(_ result: ExitTest.Result?, contains text: String) {
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains(text), "the trap message does not say \"\(text)\": \(stderr)")
    }

    @Test("S-THR-4: running a loop from a thread that does not own it traps")
    func runningAnotherThreadsLoopTraps() async {
        let run = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "mis-owner")
            try worker.start()
            let loop = worker.runLoop!
            // This thread is not the loop's: a programming error.
            loop.run(mode: .default, seconds: 0.1)
        }
        Self.expectMessage(run, contains: "this run loop belongs to thread 'mis-owner'")
        let runBefore = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "mis-owner2")
            try worker.start()
            _ = worker.runLoop!.run(mode: .default, before: Date(timeIntervalSinceNow: 0.1))
        }
        Self.expectMessage(runBefore, contains: "this run loop belongs to thread 'mis-owner2'")
    }

    @Test("S-THR-4: running RunLoop.main off the main thread traps, naming a top-level await as the likely cause")
    func runningMainOffMainThreadTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            try onNewThread { _ = RunLoop.main.run(mode: .default, seconds: 0.1) }
        }
        Self.expectMessage(result, contains: "this run loop belongs to thread 'main'")
        Self.expectMessage(result, contains: "after an `await` in main.swift")
    }

    @Test("S-MODE-4: running the loop in .common returns .finished at once, servicing nothing")
    func runningCommonFinishes() throws {
        let fired = Locked(false)
        let (result, started, elapsed) = try SpawnedThread<(RunLoop.RunResult, Bool, UInt64)>(named: "mis-common") {
            let loop = RunLoop.current
            loop.add(try Timer(timeInterval: 0, repeats: false) { _ in fired.value = true }, forMode: .common)
            loop.add(keepAliveSource(), forMode: .common)
            let start = monotonicNow()
            let result = loop.run(mode: .common, seconds: 10)
            let started = loop.run(mode: .common, before: Date(timeIntervalSinceNow: 10))
            return (result, started, monotonicNow() - start)
        }.join()
        #expect(result == .finished)
        #expect(!started, "run(mode: .common, before:) should report that the run could not start")
        // At once, not at either run's 10 s deadline (slack for a loaded machine).
        #expect(elapsed < 5_000 * nanosecondsPerMillisecond, "returns at once, not at the 10 s deadline")
        #expect(!fired.value, "a run in .common serviced a timer")
    }

    @Test("S-TMR-1: adding one timer to two loops traps")
    func timerOnTwoLoopsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let first = LoopThread(name: "mis-t1"), second = LoopThread(name: "mis-t2")
            try first.start()
            try second.start()
            let timer = try Timer(timeInterval: 60, repeats: false) { _ in }
            first.runLoop!.add(timer, forMode: .default)
            second.runLoop!.add(timer, forMode: .default)
        }
        Self.expectMessage(result, contains: "already scheduled on another run loop")
    }

    @Test("S-TMR-1: the same timer added again to its own loop, in another mode, is fine")
    func timerOnOneLoopTwiceIsFine() throws {
        let worker = LoopThread(name: "mis-t3")
        try worker.start()
        defer { worker.stop() }
        let loop = try #require(worker.runLoop)
        let timer = try Timer(timeInterval: 60, repeats: false) { _ in }
        loop.add(timer, forMode: .default)
        loop.add(timer, forMode: "S-TMR-1.other")
        loop.add(timer, forMode: .default)
        #expect(loop.contains(timer, inMode: .default) && loop.contains(timer, inMode: "S-TMR-1.other"))
        timer.invalidate()
        #expect(!loop.contains(timer, inMode: .default) && !loop.contains(timer, inMode: "S-TMR-1.other"))
    }

    @Test("S-KEEP-1: a stopped LoopThread cannot be restarted; a running one cannot be started twice")
    func restartThrows() throws {
        let worker = LoopThread(name: "mis-restart")
        try worker.start()
        #expect(throws: RunLoopError.alreadyStarted(threadName: "mis-restart")) { try worker.start() }
        worker.stop()
        #expect(throws: RunLoopError.cannotRestart(threadName: "mis-restart")) { try worker.start() }
        #expect(!worker.isRunning)
        #expect(RunLoopError.cannotRestart(threadName: "mis-restart").description.contains("make a new LoopThread"))

        let stoppedBeforeStart = LoopThread(name: "mis-restart2")
        stoppedBeforeStart.stop()
        #expect(throws: RunLoopError.cannotRestart(threadName: "mis-restart2")) { try stoppedBeforeStart.start() }
    }

    @Test("S-TMR-1: negative, NaN or infinite timer intervals throw invalidInterval")
    func invalidTimerIntervalsThrow() {
        for interval in [-1, -0.001, .nan, .infinity, -.infinity] as [Double] {
            for repeats in [false, true] {
                #expect(throws: RunLoopError.self) { try Timer(timeInterval: interval, repeats: repeats) { _ in } }
                #expect(throws: RunLoopError.self) {
                    try Timer(fire: Date(), interval: interval, repeats: repeats) { _ in }
                }
            }
        }
        do {
            _ = try Timer(timeInterval: -1, repeats: false) { _ in }
            Issue.record("a negative interval was accepted")
        } catch let error {
            guard case let .invalidInterval(value, reason) = error else {
                Issue.record("expected invalidInterval, got \(error)")
                return
            }
            #expect(value == -1 && reason.contains("negative"))
        }
        // A repeating timer needs an interval above zero; a one-shot may fire now.
        #expect(throws: RunLoopError.self) { try Timer(timeInterval: 0, repeats: true) { _ in } }
        #expect(throws: Never.self) { try Timer(timeInterval: 0, repeats: false) { _ in } }
    }

    @Test("S-BLK-3, S-BLK-2: negative or NaN delays and timeouts throw invalidInterval")
    func invalidDelaysThrow() throws {
        let worker = LoopThread(name: "mis-delay")
        try worker.start()
        defer { worker.stop() }
        let loop = try #require(worker.runLoop)
        for bad in [-1, .nan, .infinity] as [Double] {
            #expect(throws: RunLoopError.self) { try loop.perform(afterDelay: bad) {} }
        }
        // The error names the request, not a "timer interval".
        #expect(throws: RunLoopError.invalidInterval(-0.5, reason: "perform(afterDelay:) delay is negative")) {
            try loop.perform(afterDelay: -0.5) {}
        }
        // Timeouts are Durations: never NaN or infinite, but they can be negative.
        #expect(throws: RunLoopError.self) { try loop.performAndWait(timeout: .seconds(-1)) { 1 } }
        #expect(throws: RunLoopError.self) { try worker.performAndWait(timeout: .seconds(-1)) { 1 } }
    }

    @Test("S-RUN-3 misuse: run(seconds: .nan) traps")
    func runWithNaNSecondsTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let loop = RunLoop.current
            loop.add(CustomSource {}, forMode: .default)
            loop.run(mode: .default, seconds: .nan)
        }
        Self.expectMessage(result, contains: "seconds is NaN")
    }

    @Test("S-BLK-2, S-KEEP-1: submitting to a stopped LoopThread throws .stopped, no hang; before start, .notStarted")
    func submittingToStoppedThreadThrows() async throws {
        let worker = LoopThread(name: "mis-stopped")
        #expect(throws: RunLoopError.notStarted(threadName: "mis-stopped")) { try worker.performAndWait { 1 } }
        try worker.start()
        let loop = try #require(worker.runLoop)
        worker.stop()
        #expect(throws: RunLoopError.loopGone(threadName: "mis-stopped")) { try worker.performAndWait { 1 } }
        #expect(throws: RunLoopError.loopGone(threadName: "mis-stopped")) { try worker.performAndWait(timeout: .seconds(1)) { 1 } }
        #expect(throws: RunLoopError.loopGone(threadName: "mis-stopped")) { try worker.perform {} }
        #expect(throws: RunLoopError.loopGone(threadName: "mis-stopped")) { try worker.perform(waitUntilDone: true) {} }
        await #expect(throws: RunLoopError.loopGone(threadName: "mis-stopped")) { try await worker.performAndAwait { 1 } }
        // The classic dangling-thread pitfall: the old loop reference is harmless.
        #expect(loop.hasThreadExited)
        #expect(!loop.perform {})
        #expect(throws: RunLoopError.loopGone(threadName: "mis-stopped")) { try loop.performAndWait { 1 } }
        loop.wakeUp()
        loop.stop()
    }
}
