// Running the loop: stop() (S-RUN-4), and the convenience entry points
// that repeat the primitive run, which stop() does or does not end (S-RUN-6).
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("Running the loop: stop and the convenience entry points (S-RUN-4, S-RUN-6)", .blocksThreads)
struct RunStopTests {
    // MARK: S-RUN-4

    @Test("S-RUN-4: stop() from another thread wakes a sleeping run and ends it with stopped")
    func stopFromAnotherThread() throws {
        let events = EventLog()
        let loopHandoff = Handoff<RunLoop>()
        let thread = SpawnedThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            loop.add(unsignalledSource(), forMode: .default)
            loopHandoff.put(loop)
            return loop.run(mode: .default, seconds: 30)
        }
        let loop = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        loop.stop()
        #expect(try thread.join() == .stopped)
        #expect(events.all == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"])
    }

    @Test("S-RUN-4: a stop with no run in progress is remembered: the next run returns stopped at once, once")
    func stopIsRemembered() throws {
        let events = EventLog()
        let results = try onNewThread { () -> [RunLoop.RunResult] in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            let source = CustomSource { events.add("source0") }
            loop.add(source, forMode: .default)
            source.signal()
            loop.stop()
            let first = loop.run(mode: .default, seconds: 10)
            events.add("--")
            let second = loop.run(mode: .default, seconds: 0)
            return [first, second]
        }
        #expect(results == [.stopped, .timedOut])
        #expect(events.all == [
            "entry", "exit", "--",
            "entry", "beforeTimers", "beforeSources", "source0", "exit",
        ])
    }

    @Test("S-RUN-4: stop() inside a callout ends the run after that callout returns, without sleeping")
    func stopInsideCalloutEndsAfterIt() throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            let source = CustomSource {
                events.add("perform begins")
                loop.stop()
                events.add("perform ends")
            }
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(mode: .default, seconds: 30)
        }
        #expect(result == .stopped)
        #expect(events.all == ["entry", "beforeTimers", "beforeSources", "perform begins", "perform ends", "exit"])
    }

    @Test("S-RUN-4: a stop from a Source0's perform ends the pass there: later signalled sources wait for the next run")
    func stopLeavesLaterSourcesForNextRun() throws {
        let events = EventLog()
        let results = try onNewThread { () -> [RunLoop.RunResult] in
            let loop = RunLoop.current
            let stopper = CustomSource(order: 0) {
                events.add("stopper")
                loop.stop()
            }
            let later = CustomSource(order: 1) { events.add("later") }
            loop.add(stopper, forMode: .default)
            loop.add(later, forMode: .default)
            stopper.signal()
            later.signal()
            let first = loop.run(mode: .default, seconds: 30)
            events.add("--")
            return [first, loop.run(mode: .default, seconds: 0)]
        }
        #expect(results == [.stopped, .timedOut])
        #expect(events.all == ["stopper", "--", "later"])
    }

    // MARK: S-RUN-6

    @Test("S-RUN-6: run(mode:before:) is false for an empty or common mode, true otherwise, and handles one source")
    func runModeBeforeDateResult() throws {
        let events = EventLog()
        let results = try onNewThread { () -> [Bool] in
            let loop = RunLoop.current
            let empty = loop.run(mode: "S-RUN-6.empty", before: Date(timeIntervalSinceNow: 10))
            let first = CustomSource(order: 0) { events.add("first") }
            let second = CustomSource(order: 1) { events.add("second") }
            loop.add(first, forMode: .common)
            loop.add(second, forMode: .common)
            let common = loop.run(mode: .common, before: Date(timeIntervalSinceNow: 10))
            first.signal()
            second.signal()
            let handled = loop.run(mode: .default, before: Date(timeIntervalSinceNow: 10))
            events.add("--")
            loop.add(unsignalledSource(), forMode: "S-RUN-6.idle")
            let idle = loop.run(mode: "S-RUN-6.idle", before: Date(timeIntervalSinceNow: 0.05))
            return [empty, common, handled, idle]
        }
        #expect(results == [false, false, true, true])
        #expect(events.all == ["first", "--"])
    }

    @Test("S-RUN-6: runUntilStopped() ends on stop() from another thread, after a single run")
    func runUntilStoppedEndsOnStop() throws {
        let events = EventLog()
        let loopHandoff = Handoff<RunLoop>()
        let thread = SpawnedThread { () -> Void in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events, activities: [.entry, .exit])
            loop.add(unsignalledSource(), forMode: .default)
            loopHandoff.put(loop)
            loop.runUntilStopped()
            events.add("returned")
        }
        let loop = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        loop.stop()
        try thread.join()
        #expect(events.all == ["entry", "exit", "returned"])
    }

    @Test("S-RUN-6: runUntilStopped() also ends when the default mode runs out of sources and timers")
    func runUntilStoppedEndsWhenFinished() throws {
        let fires = try onNewThread { () -> Int in
            let loop = RunLoop.current
            let fires = Counter()
            loop.add(try RunLoopKitCore.Timer(timeInterval: 0.01, repeats: false) { _ in fires.increment() }, forMode: .default)
            loop.runUntilStopped()
            return fires.value
        }
        #expect(fires == 1)
    }

    @Test("S-RUN-6: stop() does not end run(until:): it starts a new run and returns only at the date")
    func runUntilDateIsNotEndedByStop() throws {
        let events = EventLog()
        let (elapsed, stoppedBeforeDate) = try onNewThread { () -> (Double, Bool) in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events, activities: [.entry, .exit])
            loop.add(unsignalledSource(), forMode: .default)
            let date = Date(timeIntervalSinceNow: 0.3)
            // Whether the stopped run exited before the date: the last moment
            // this side sees before run(until:) decides on another run.
            let exitedBeforeDate = Counter()
            let exits = Counter()
            loop.add(RunLoopObserver(activities: .exit) { _, _ in
                exits.increment()
                if exits.value == 1 && Date() < date { exitedBeforeDate.increment() }
            }, forMode: .default)
            loop.add(try RunLoopKitCore.Timer(timeInterval: 0.02, repeats: false) { _ in
                events.add("timer stops")
                loop.stop()
            }, forMode: .default)
            let start = DispatchTime.now()
            loop.run(until: date)
            return (Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9, exitedBeforeDate.value == 1)
        }
        #expect(elapsed >= 0.29, "run(until:) returned before its date")
        // A new run follows a stop that left the date ahead. (A thread kept
        // waiting past the date, as a loaded machine under a sanitizer may
        // keep it, fires the timer late: then no run follows, rightly.)
        #expect(events.all == (stoppedBeforeDate ? ["entry", "timer stops", "exit", "entry", "exit"] : ["entry", "timer stops", "exit"]))
    }

    @Test("S-RUN-6: stop() does not end run(): it starts a new run; only emptying the default mode ends it")
    func runForeverIsNotEndedByStop() throws {
        let events = EventLog()
        try onNewThread(timeout: 30) { () -> Void in
            let loop = RunLoop.current
            let keepAlive = unsignalledSource()
            loop.add(keepAlive, forMode: .default)
            let entries = Counter()
            let observer = RunLoopObserver(activities: [.entry, .exit]) { _, activity in
                events.add(activity.name)
                // The second run is the proof; then empty the mode to let run() return.
                if activity == .entry && entries.increment() == 2 { keepAlive.invalidate() }
            }
            loop.add(observer, forMode: .default)
            loop.add(try RunLoopKitCore.Timer(timeInterval: 0.02, repeats: false) { _ in
                events.add("timer stops")
                loop.stop()
            }, forMode: .default)
            loop.run()
            events.add("run() returned")
        }
        #expect(events.all == ["entry", "timer stops", "exit", "entry", "exit", "run() returned"])
    }
}
