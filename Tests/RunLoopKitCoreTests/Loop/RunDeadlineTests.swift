// Running the loop: a deadline of zero polls (S-RUN-3); timers never count
// as handled sources, and a run before a date lasts to the date (S-RUN-5).
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("Running the loop: deadlines and handled sources (S-RUN-3, S-RUN-5)", .blocksThreads)
struct RunDeadlineTests {
    // MARK: S-RUN-3

    @Test("S-RUN-3: a zero deadline polls: one pass, no beforeWaiting, then timedOut", arguments: [0.0, -1.0])
    func zeroDeadlinePolls(seconds: Double) throws {
        let events = EventLog()
        let results = try onNewThread { () -> [RunLoop.RunResult] in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            loop.add(distantTimer(), forMode: .default)
            let source = CustomSource { events.add("source0") }
            loop.add(source, forMode: .default)
            source.signal()
            let withSource = loop.run(mode: .default, seconds: seconds)
            events.add("--")
            let idle = loop.run(mode: .default, seconds: seconds)
            return [withSource, idle]
        }
        #expect(results == [.timedOut, .timedOut])
        #expect(events.all == [
            "entry", "beforeTimers", "beforeSources", "source0", "exit", "--",
            "entry", "beforeTimers", "beforeSources", "exit",
        ])
    }

    @Test("S-RUN-3: run(mode:before:) with a date in the past polls once and returns true")
    func pastDatePolls() throws {
        let events = EventLog()
        let started = try onNewThread { () -> Bool in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            loop.add(unsignalledSource(), forMode: .default)
            return loop.run(mode: .default, before: Date(timeIntervalSinceNow: -5))
        }
        #expect(started)
        #expect(events.all == ["entry", "beforeTimers", "beforeSources", "exit"])
    }

    // MARK: S-RUN-5

    @Test("S-RUN-5: timers never cause handledSource: a run with returnAfterSourceHandled keeps running through timer fires")
    func timersDoNotCountAsHandledSources() throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events, activities: [.entry, .exit])
            let source = CustomSource { events.add("source0") }
            loop.add(source, forMode: .default)
            let fires = Counter()
            let timer = try RunLoopKitCore.Timer(timeInterval: 0.01, repeats: true) { timer in
                events.add("timer")
                if fires.increment() == 3 {
                    timer.invalidate()
                    source.signal()  // on the loop thread: the next pass performs it
                }
            }
            loop.add(timer, forMode: .default)
            return loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: true)
        }
        #expect(result == .handledSource)
        #expect(events.all == ["entry", "timer", "timer", "timer", "source0", "exit"])
    }

    @Test("S-RUN-5: a run with returnAfterSourceHandled whose only timer fired ends finished, not handledSource")
    func timerOnlyRunFinishes() throws {
        let (result, fired) = try onNewThread { () -> (RunLoop.RunResult, Int) in
            let loop = RunLoop.current
            let fires = Counter()
            loop.add(try RunLoopKitCore.Timer(timeInterval: 0.01, repeats: false) { _ in fires.increment() }, forMode: .default)
            return (loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: true), fires.value)
        }
        #expect(fired == 1)
        #expect(result == .finished)
    }

    @Test("S-RUN-5: run(mode:before:) does not return after a timer fire, only at the date")
    func runModeBeforeDateIgnoresTimers() throws {
        // On a test clock (S-TMR-7): two fires, then the date, in that order
        // however late the loop's thread runs on a loaded machine. Were the
        // run to return after a fire, the second fire would never come.
        let clock = TestClock()
        let fired = DispatchSemaphore(value: 0)
        let looping = Handoff<RunLoop>()
        let runner = SpawnedThread(named: "run-before") { () -> (started: Bool, fires: Int, returnedAt: Date, date: Date) in
            let loop = RunLoop.current
            loop.use(clock)
            let fires = Counter()
            // Scheduled by the loop, so that its dates are on the loop's clock.
            let timer = try loop.scheduledTimer(withTimeInterval: 0.02, repeats: true) { _ in
                fires.increment()
                fired.signal()
            }
            looping.put(loop)
            let date = clock.now + 0.2
            let started = loop.run(mode: .default, before: date)
            timer.invalidate()
            return (started, fires.value, clock.now, date)
        }
        let loop = try looping.take()
        #expect(waitUntil { loop.isWaiting && loop.currentMode == .default })
        clock.advance(by: .milliseconds(20))
        #expect(waitFor(fired), "the first fire did not come")
        clock.advance(by: .milliseconds(20))
        #expect(waitFor(fired), "the run returned after the first fire")
        clock.advance(by: .milliseconds(200))
        let outcome = try runner.join()
        #expect(outcome.started)
        #expect(outcome.fires >= 2)
        #expect(outcome.returnedAt >= outcome.date, "the run returned before its date")
    }
}
