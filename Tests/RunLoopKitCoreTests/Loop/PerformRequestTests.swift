// What a porter from Foundation reaches for beside plain performs: ordered
// performers (NSRunLoop perform(_:target:argument:order:modes:), as blocks),
// cancelling a queued block (by its PerformRequest or by tag), a
// LoopThread's tasks in given modes (performSelector:onThread:...modes:),
// and Timer.userInfo. Loops run on threads made for the test.
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Ordered and cancellable performs, modes on a LoopThread, Timer.userInfo", .blocksThreads)
struct PerformRequestTests {
    @Test("S-BLK-4: ordered performs run lowest order first; equal orders, and plain performs as order 0, in the order queued")
    func orderedPerformsRunByOrder() throws {
        let ran = try SpawnedThread<[String]>.run(named: "prq-order") {
            let loop = RunLoop.current
            loop.add(keepAliveSource(), forMode: .default)
            let log = EventLog()
            loop.perform(order: 5, inModes: [.default]) { log.add("5a") }
            loop.perform(order: -1, inModes: [.default]) { log.add("-1") }
            loop.perform { log.add("plain") }
            loop.perform(order: 5, inModes: [.common]) { log.add("5b") }
            loop.perform(order: 0, inModes: [.default]) { log.add("0") }
            loop.perform(order: 2, inModes: [.default]) { log.add("2") }
            loop.run(mode: .default, seconds: 0)
            return log.all
        }
        #expect(ran == ["-1", "plain", "0", "2", "5a", "5b"])
    }

    @Test("S-BLK-1, S-BLK-5: an ordered perform runs only in its modes, wakes the loop and counts as a handled source")
    func orderedPerformModes() throws {
        let modeX = RunLoop.Mode("S-BLK-1.ordered.X")
        let outcome = try SpawnedThread<([String], Bool, Bool)>.run(named: "prq-modes") {
            let loop = RunLoop.current
            loop.add(keepAliveSource(), forMode: .default)
            let log = EventLog()
            loop.perform(order: 1, inModes: [modeX]) { log.add("x") }
            loop.run(mode: .default, seconds: 0)
            let afterDefault = log.all
            // Mode X holds nothing but the block, which keeps it from being empty.
            let handled = loop.run(mode: modeX, before: .distantFuture)
            return (afterDefault, handled, log.all == ["x"])
        }
        #expect(outcome.0.isEmpty, "the block for mode X ran in .default: \(outcome.0)")
        #expect(outcome.1, "run(mode: X, before:) did not return after the block (S-BLK-5)")
        #expect(outcome.2)
    }

    @Test("S-BLK-3: a PerformRequest cancelled before its block starts: the block never runs; cancelling later returns false")
    func requestCancel() throws {
        let outcome = try SpawnedThread<(Bool, Bool, Bool, [String])>.run(named: "prq-cancel") {
            let loop = RunLoop.current
            loop.add(keepAliveSource(), forMode: .default)
            let log = EventLog()
            let dropped = try #require(loop.perform(order: 0, inModes: [.default]) { log.add("dropped") })
            let kept = try #require(loop.perform(order: 0, inModes: [.default]) { log.add("kept") })
            let first = dropped.cancel()
            let again = dropped.cancel()
            loop.run(mode: .default, seconds: 0)
            return (first, again, kept.cancel(), log.all)
        }
        #expect(outcome.0, "cancel() before the block started returned false")
        #expect(!outcome.1, "a second cancel() returned true")
        #expect(!outcome.2, "cancel() after the block ran returned true")
        #expect(outcome.3 == ["kept"])
    }

    @Test("S-BLK-3, S-RUN-1: a cancelled block does not keep its mode from being empty")
    func cancelledBlockLeavesModeEmpty() throws {
        let modeX = RunLoop.Mode("S-BLK-3.cancelled.X")
        let log = EventLog()
        let result = try SpawnedThread<RunLoop.RunResult>.run(named: "prq-empty") {
            let loop = RunLoop.current
            let request = try #require(loop.perform(order: 0, inModes: [modeX]) { log.add("a cancelled block ran") })
            request.cancel()
            return loop.run(mode: modeX, seconds: 0)
        }
        #expect(result == .finished)
        #expect(log.all.isEmpty)
    }

    @Test("S-BLK-3: cancelPerformRequests(tag:) withdraws queued blocks of that tag too; a performAndWait waiting on one throws .cancelled")
    func cancelByTagWithdrawsQueuedBlocks() throws {
        let thread = LoopThread(name: "prq-tag")
        try thread.start()
        defer { thread.stop() }
        let loop = try #require(thread.runLoop)
        let log = EventLog()
        // Hold the loop thread in a task, so that what follows stays queued.
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        try thread.perform {
            holding.signal()
            release.wait()
        }
        #expect(waitFor(holding), "the holding task never started")
        try thread.perform(tag: "save") { log.add("save task") }
        let request = try thread.perform(order: 3, tag: "save") { log.add("save ordered") }
        loop.perform(tag: "other") { log.add("other") }
        let waiter = SpawnedThread<String>(named: "prq-waiter") {
            do {
                try thread.performAndWait(tag: "save") { log.add("save waited") }
                return "returned"
            } catch let error as RunLoopError {
                return "\(error)"
            }
        }
        #expect(waitUntil { loop.pendingBlockCount.load(ordering: .acquiring) == 4 }, "the waiter's block was never queued")
        loop.cancelPerformRequests(tag: "save")
        release.signal()
        let waited = try waiter.join()
        try thread.performAndWait {}
        #expect(log.all == ["other"])
        #expect(request.isCancelled)
        #expect(waited == "\(RunLoopError.cancelled(tag: "save", threadName: "prq-tag"))")
    }

    @Test("S-KEEP-1, S-BLK-1: a LoopThread's task for a mode of its own waits until the thread's loop runs that mode")
    func loopThreadTaskInModes() throws {
        let modeX = RunLoop.Mode("S-KEEP-1.tasks.X")
        let thread = LoopThread(name: "prq-lt-modes")
        try thread.start()
        defer { thread.stop() }
        let log = EventLog()
        try thread.perform(inModes: [modeX]) { log.add("x in \(RunLoop.current.currentMode?.rawValue ?? "?")") }
        try thread.performAndWait { log.add("default task") }
        #expect(log.all == ["default task"], "the task for mode X ran while the loop ran its own mode")
        // A task that runs the thread's loop in X once: the X task runs inside it.
        let nested = try thread.performAndWait { RunLoop.current.run(mode: modeX, seconds: 0) }
        #expect(log.all == ["default task", "x in \(modeX.rawValue)"])
        #expect(nested == .handledSource || nested == .timedOut)
        let waited = try thread.performAndWait(inModes: [.common], timeout: .seconds(10)) { "common" }
        #expect(waited == "common")
    }

    @Test("S-TMR-1: Timer.userInfo carries what the timer was made with to its block")
    func timerUserInfo() throws {
        let seen = try SpawnedThread<[String]>.run(named: "prq-userinfo") {
            let loop = RunLoop.current
            let log = EventLog()
            let timer = try Timer(timeInterval: 0, userInfo: "payload", repeats: false) { timer in
                log.add(timer.userInfo as? String ?? "nil")
            }
            loop.add(timer, forMode: .default)
            let scheduled = try loop.scheduledTimer(withTimeInterval: 0, userInfo: 42, repeats: false) { timer in
                log.add("\(timer.userInfo as? Int ?? -1)")
            }
            let plain = try Timer(timeInterval: 60, repeats: false) { _ in }
            log.add(plain.userInfo == nil ? "plain nil" : "plain set")
            _ = scheduled
            while loop.run(mode: .default, seconds: 5) != .finished {}
            return log.all
        }
        #expect(seen.sorted() == ["42", "payload", "plain nil"])
    }
}
