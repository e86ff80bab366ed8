// Running the loop: the order of one run, step by step (S-RUN-2).
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("Running the loop: the order of a run (S-RUN-2)", .blocksThreads)
struct RunOrderTests {
    // MARK: S-RUN-2

    @Test("S-RUN-2: one pass runs queued blocks, then signalled Source0s, then exits after the source with returnAfterSourceHandled")
    func sequenceWithBlockAndSource0() throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            let source = CustomSource { events.add("source0") }
            loop.add(source, forMode: .default)
            source.signal()
            loop.perform(inModes: [.default]) { events.add("block") }
            return loop.run(mode: .default, seconds: 10, returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
        // No beforeWaiting: a source was handled, so the loop did not sleep (step 7).
        #expect(events.all == ["entry", "beforeTimers", "beforeSources", "block", "source0", "exit"])
    }

    @Test("S-RUN-2: blocks queued by a Source0's perform run in the same pass, after every signalled source")
    func blocksQueuedBySource0RunInSamePass() throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            let first = CustomSource(order: 0) {
                events.add("source0 first")
                loop.perform(inModes: [.default]) { events.add("block from first") }
            }
            let second = CustomSource(order: 1) { events.add("source0 second") }
            loop.add(second, forMode: .default)
            loop.add(first, forMode: .default)
            first.signal()
            second.signal()
            return loop.run(mode: .default, seconds: 0)
        }
        #expect(result == .timedOut)
        #expect(events.all == [
            "entry", "beforeTimers", "beforeSources", "source0 first", "source0 second", "block from first", "exit",
        ])
    }

    @Test("S-RUN-2: a sleeping run: beforeWaiting, sleep, afterWaiting, then a new pass performs the source that woke it")
    func sequenceAcrossSleep() throws {
        let events = EventLog()
        let loopHandoff = Handoff<(RunLoop, CustomSource)>()
        let thread = SpawnedThread { () -> (RunLoop.RunResult, Bool) in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            let performedOnLoopThread = Locked(false)
            let source = CustomSource {
                events.add("source0")
                performedOnLoopThread.value = RunLoop.current === loop
            }
            loop.add(source, forMode: .default)
            loopHandoff.put((loop, source))
            let result = loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: true)
            return (result, performedOnLoopThread.value)
        }
        let (loop, source) = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        source.signalAndWakeUp()
        let (result, onLoopThread) = try thread.join()
        #expect(result == .handledSource)
        #expect(onLoopThread)
        #expect(events.all == [
            "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
            "beforeTimers", "beforeSources", "source0", "exit",
        ])
    }

    @Test("S-RUN-2: timers fire after afterWaiting (step 9); a stop from the timer ends the run")
    func sequenceWithTimer() throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            loop.add(unsignalledSource(), forMode: .default)
            let timer = try RunLoopKitCore.Timer(timeInterval: 0.05, repeats: false) { _ in
                events.add("timer")
                loop.stop()
            }
            loop.add(timer, forMode: .default)
            return loop.run(mode: .default, seconds: 30)
        }
        #expect(result == .stopped)
        #expect(events.all == [
            "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer", "exit",
        ])
    }

    @Test("S-RUN-2: when the last timer of the mode has fired, the run returns finished (step 11)")
    func runFinishesWhenModeEmpties() throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            loop.add(try RunLoopKitCore.Timer(timeInterval: 0.02, repeats: false) { _ in events.add("timer") }, forMode: .default)
            return loop.run(mode: .default, seconds: 30)
        }
        #expect(result == .finished)
        #expect(events.all == [
            "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "timer", "exit",
        ])
    }

    @Test(
        "S-RUN-2: an observer that empties the mode from the loop's own thread, which wakes nothing, ends the run with finished: before the pass sleeps (no beforeWaiting) or at beforeWaiting (its afterWaiting told, no sleep)",
        arguments: [RunLoop.Activity.beforeSources, .beforeWaiting])
    func observerEmptyingTheModeEndsTheRun(emptiedAt activity: RunLoop.Activity) throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            let keepAlive = unsignalledSource()
            loop.add(keepAlive, forMode: .default)
            recordActivities(of: loop, mode: .default, into: events)
            loop.add(RunLoopObserver(activities: activity, order: 1) { _, _ in keepAlive.invalidate() }, forMode: .default)
            return loop.run(mode: .default, seconds: 30)
        }
        #expect(result == .finished)
        let waits = activity == .beforeWaiting ? ["beforeWaiting", "afterWaiting"] : []
        #expect(events.all == ["entry", "beforeTimers", "beforeSources"] + waits + ["exit"])
    }

    @Test("S-RUN-2: returnAfterSourceHandled stops after the first signalled Source0; the rest wait for the next run")
    func returnAfterSourceHandledPerformsOneSource() throws {
        let events = EventLog()
        let results = try onNewThread { () -> [RunLoop.RunResult] in
            let loop = RunLoop.current
            let first = CustomSource(order: 0) { events.add("first") }
            let second = CustomSource(order: 1) { events.add("second") }
            loop.add(first, forMode: .default)
            loop.add(second, forMode: .default)
            first.signal()
            second.signal()
            let one = loop.run(mode: .default, seconds: 10, returnAfterSourceHandled: true)
            events.add("between")
            let two = loop.run(mode: .default, seconds: 10, returnAfterSourceHandled: true)
            return [one, two]
        }
        #expect(results == [.handledSource, .handledSource])
        #expect(events.all == ["first", "between", "second"])
    }
}
