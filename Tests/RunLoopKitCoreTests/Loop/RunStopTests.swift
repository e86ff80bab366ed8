// Running, results and exits: S-RUN-1 to S-RUN-9.
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("Running the loop")
struct RunTests {
    // MARK: S-RUN-1

    @Test("S-RUN-1: an empty mode returns finished at once and notifies no observer; observers alone do not keep it alive")
    func emptyModeFinishesWithoutNotifying() throws {
        let events = EventLog()
        let (results, started, elapsed) = try onNewThread { () -> ([RunLoop.RunResult], Bool, Double) in
            let loop = RunLoop.current
            let mode: RunLoop.Mode = "S-RUN-1.observers-only"
            recordActivities(of: loop, mode: mode, into: events)
            let start = DispatchTime.now()
            let results = [
                loop.run(mode: mode, seconds: 10),
                loop.run(mode: mode, seconds: 10, returnAfterSourceHandled: true),
                loop.run(mode: "S-RUN-1.never-used", seconds: 10),
            ]
            let started = loop.run(mode: mode, before: Date(timeIntervalSinceNow: 10))
            return (results, started, Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9)
        }
        #expect(results == [.finished, .finished, .finished])
        #expect(started == false)
        #expect(events.all.isEmpty)
        #expect(elapsed < 5, "returns at once, not at the 10 s deadline")
    }

    @Test("S-RUN-1: a mode kept alive by timers alone runs while a timer's callout swaps it for another (the mode never without one), and finishes once the last one goes")
    func timersAloneKeepARunUntilTheLastGoes() throws {
        let (result, fired, seconds) = try onNewThread { () -> (RunLoop.RunResult, [Int], Double) in
            let loop = RunLoop.current
            let mode: RunLoop.Mode = "S-RUN-1.timers-only"
            let fired = Locked<[Int]>([])
            // Each timer, as it fires, invalidates itself and adds the next:
            // the mode's timers go from one to one, never none, until the
            // fifth, which adds none.
            @Sendable func schedule(_ number: Int) {
                let timer = try! Timer(timeInterval: 0.005, repeats: true) { timer in
                    fired.withLock { $0.append(number) }
                    timer.invalidate()
                    if number < 5 { schedule(number + 1) }
                }
                RunLoop.current.add(timer, forMode: mode)
            }
            schedule(1)
            let start = monotonicNow()
            let result = loop.run(mode: mode, seconds: 10)
            return (result, fired.withLock { $0 }, Double(monotonicNow() - start) / 1e9)
        }
        #expect(result == .finished)
        #expect(fired == [1, 2, 3, 4, 5])
        #expect(seconds < 5, "the run went on \(seconds) s after its last timer")
    }

    @Test("S-RUN-1: a mode whose last source is removed is empty again")
    func modeEmptiedByRemovalFinishes() throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            let source = unsignalledSource()
            loop.add(source, forMode: .default)
            loop.remove(source, forMode: .default)
            recordActivities(of: loop, mode: .default, into: events)
            return loop.run(mode: .default, seconds: 10)
        }
        #expect(result == .finished)
        #expect(events.all.isEmpty)
    }

    @Test("S-RUN-1: a block pending for the mode keeps an otherwise empty run going until it has run")
    func pendingBlockMakesModeNonEmpty() throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            let mode: RunLoop.Mode = "S-RUN-1.block"
            recordActivities(of: loop, mode: mode, into: events)
            loop.perform(inModes: [mode]) { events.add("block") }
            return loop.run(mode: mode, seconds: 10)
        }
        #expect(result == .finished)
        #expect(events.all == ["entry", "beforeTimers", "beforeSources", "block", "exit"])
    }

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
        let elapsed = try onNewThread { () -> Double in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events, activities: [.entry, .exit])
            loop.add(unsignalledSource(), forMode: .default)
            loop.add(try RunLoopKitCore.Timer(timeInterval: 0.02, repeats: false) { _ in
                events.add("timer stops")
                loop.stop()
            }, forMode: .default)
            let start = DispatchTime.now()
            loop.run(until: Date(timeIntervalSinceNow: 0.3))
            return Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        }
        #expect(elapsed >= 0.29, "run(until:) returned before its date")
        #expect(events.all == ["entry", "timer stops", "exit", "entry", "exit"])
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

    // MARK: S-RUN-7

    @Test("S-RUN-7: wakeUp() makes a sleeping loop pass through its sequence exactly once; isWaiting tells when it sleeps")
    func wakeUpPassesOnce() throws {
        let events = EventLog()
        let loopHandoff = Handoff<RunLoop>()
        let waitingInsideCallout = Locked<Bool?>(nil)
        let thread = SpawnedThread { () -> (RunLoop.RunResult, Bool, Bool) in
            let loop = RunLoop.current
            let waitingBefore = loop.isWaiting
            recordActivities(of: loop, mode: .default, into: events)
            let source = CustomSource { waitingInsideCallout.value = loop.isWaiting }
            loop.add(source, forMode: .default)
            source.signal()
            loopHandoff.put(loop)
            let result = loop.run(mode: .default, seconds: 30)
            return (result, waitingBefore, loop.isWaiting)
        }
        let loop = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        let passesBefore = loop.passesCompleted
        let logBefore = events.count
        loop.wakeUp()
        #expect(waitUntil { loop.passesCompleted == passesBefore + 1 && loop.isWaiting })
        let afterWake = Array(events.all.dropFirst(logBefore))
        #expect(afterWake == ["afterWaiting", "beforeTimers", "beforeSources", "beforeWaiting"])
        #expect(loop.passesCompleted == passesBefore + 1)
        loop.stop()
        let (result, waitingBefore, waitingAfter) = try thread.join()
        #expect(result == .stopped)
        #expect(!waitingBefore)
        #expect(!waitingAfter)
        #expect(waitingInsideCallout.value == false)
    }

    @Test("S-RUN-7: a wake-up that arrives before the loop sleeps is not lost")
    func wakeUpBeforeSleepIsNotLost() throws {
        let events = EventLog()
        let result = try onNewThread(timeout: 30) { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            loop.add(unsignalledSource(), forMode: .default)
            let waits = Counter()
            recordActivities(of: loop, mode: .default, into: events)
            // Called just before the loop sleeps: the first wakes it, the second stops it.
            let observer = RunLoopObserver(activities: .beforeWaiting, order: 1) { _, _ in
                if waits.increment() == 1 { loop.wakeUp() } else { loop.stop() }
            }
            loop.add(observer, forMode: .default)
            return loop.run(mode: .default, seconds: 20)
        }
        #expect(result == .stopped)
        #expect(events.all == [
            "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
            "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit",
        ])
    }

    // MARK: S-RUN-8

    @Test("S-RUN-8: runs nest in another mode and the same mode, each with its own result; stop ends only the innermost")
    func nestedRuns() throws {
        let events = EventLog()
        let outer = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            let modeA: RunLoop.Mode = "S-RUN-8.A"
            let modeB: RunLoop.Mode = "S-RUN-8.B"
            recordActivities(of: loop, mode: modeA, into: events, prefix: "A:")
            recordActivities(of: loop, mode: modeB, into: events, prefix: "B:")
            let sourceB = CustomSource {
                events.add("sourceB stops")
                loop.stop()
            }
            loop.add(sourceB, forMode: modeB)
            let selfReference = Locked<CustomSource?>(nil)
            let sourceA = CustomSource {
                events.add("sourceA begins")
                sourceB.signal()
                let inB = loop.run(mode: modeB, seconds: 10)
                events.add("inner B: \(inB), current mode \(loop.currentMode?.rawValue ?? "none")")
                let inA = loop.run(mode: modeA, seconds: 0)
                events.add("inner A: \(inA)")
                // Empty mode A: the outer run can now only end finished, or
                // stopped if the inner stop had leaked out to it.
                selfReference.value?.invalidate()
                events.add("sourceA ends")
            }
            selfReference.value = sourceA
            // Breaks the cycle sourceA → its closure → selfReference →
            // sourceA, which would keep the loop alive after its thread exits.
            defer { selfReference.value = nil }
            loop.add(sourceA, forMode: modeA)
            sourceA.signal()
            return loop.run(mode: modeA, seconds: 10)
        }
        #expect(outer == .finished)
        #expect(events.all == [
            "A:entry", "A:beforeTimers", "A:beforeSources", "sourceA begins",
            "B:entry", "B:beforeTimers", "B:beforeSources", "sourceB stops", "B:exit",
            "inner B: stopped, current mode S-RUN-8.A",
            "A:entry", "A:beforeTimers", "A:beforeSources", "A:exit",
            "inner A: timedOut",
            "sourceA ends",
            "A:exit",
        ])
    }

    @Test("S-RUN-8: a stop() from another thread while a nested run sleeps ends only the nested run")
    func stopFromAnotherThreadEndsInnermostRun() throws {
        let events = EventLog()
        let loopHandoff = Handoff<RunLoop>()
        let thread = SpawnedThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            let inner: RunLoop.Mode = "S-RUN-8.inner"
            loop.add(unsignalledSource(), forMode: inner)
            let selfReference = Locked<CustomSource?>(nil)
            let source = CustomSource {
                loopHandoff.put(loop)
                events.add("inner: \(loop.run(mode: inner, seconds: 30))")
                selfReference.value?.invalidate()
            }
            selfReference.value = source
            // Breaks the cycle source → its closure → selfReference → source,
            // which would keep the loop alive after its thread exits.
            defer { selfReference.value = nil }
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(mode: .default, seconds: 30)
        }
        let loop = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting && loop.currentMode == "S-RUN-8.inner" })
        loop.stop()
        #expect(try thread.join() == .finished)
        #expect(events.all == ["inner: stopped"])
    }

    // MARK: S-RUN-9

    @Test("S-RUN-9: an idle loop with socket sources and a timer an hour away sleeps: no passes, no CPU")
    func idleLoopUsesNoCPU() throws {
        let worker = LoopThread(name: "run9-idle")
        try worker.start()
        defer { worker.stop() }
        let loop = try #require(worker.runLoop)
        let tid = try #require(worker.threadID)

        let context = ZMQContext.shared
        let pairEndpoint = uniqueEndpoint("run9-pair")
        let pair = try context.makeSocket(.pair)
        try pair.bind(pairEndpoint)
        let pairPeer = try context.makeSocket(.pair)
        try pairPeer.connect(pairEndpoint)
        let pullEndpoint = uniqueEndpoint("run9-pull")
        let pull = try context.makeSocket(.pull)
        try pull.bind(pullEndpoint)
        let push = try context.makeSocket(.push)
        try push.connect(pullEndpoint)
        let pipeFDs = try makePipe()
        defer { close(pipeFDs.read); close(pipeFDs.write) }

        let handled = Counter()
        let sources = [
            SocketSource(socket: pair) { _, socket in handled.increment(); _ = try? socket.receiveMultipart(dontWait: true) },
            SocketSource(socket: pull) { _, socket in handled.increment(); _ = try? socket.receiveMultipart(dontWait: true) },
            SocketSource(fileDescriptor: pipeFDs.read) { _, _ in handled.increment() },
        ]
        let timer = try RunLoopKitCore.Timer(timeInterval: 3600, repeats: true) { _ in handled.increment() }
        try worker.performAndWait {
            for source in sources { try loop.add(source, forMode: .default) }
            loop.add(timer, forMode: .default)
        }
        defer {
            timer.invalidate()
            for source in sources { source.invalidate() }
        }
        // Settle: the loop has taken the new items and gone to sleep, and
        // the one-off wake-ups of registering them (an fd that was already
        // signalled) are over: asleep with no pass for 50 ms.
        try worker.performAndWait {}
        var settled = false
        for _ in 0..<100 where !settled {
            let passes = loop.passesCompleted
            usleep(50_000)
            settled = loop.isWaiting && loop.passesCompleted == passes
        }
        #expect(settled)
        let passesBefore = loop.passesCompleted
        let cpuBefore = try #require(threadCPUNanoseconds(tid: tid))
        usleep(1_000_000)  // the measurement window, not synchronisation
        let passesAfter = loop.passesCompleted
        let cpuAfter = try #require(threadCPUNanoseconds(tid: tid))
        #expect(passesAfter == passesBefore, "an idle loop woke \(passesAfter - passesBefore) times in 1 s")
        #expect(loop.isWaiting)
        #expect(cpuAfter - cpuBefore < 20_000_000, "an idle loop used \(Double(cpuAfter - cpuBefore) / 1e6) ms of CPU in 1 s")
        #expect(handled.value == 0)
    }
}

@Suite("limitDate(forMode:) (S-RUN-10)")
struct LimitDateTests {
    @Test("S-RUN-10: nil for an empty mode, distantFuture for sources without a timer, else the next timer's exact date")
    func answers() throws {
        let (empty, common, sourcesOnly, withTimers, earliest) =
            try onNewThread { () -> (Date?, Date?, Date?, Date?, Date) in
                let loop = RunLoop.current
                let empty = loop.limitDate(forMode: RunLoop.Mode("S-RUN-10.empty"))
                let common = loop.limitDate(forMode: .common)
                let mode = RunLoop.Mode("S-RUN-10.mode")
                // Observers alone leave a mode empty (S-RUN-1).
                loop.add(RunLoopObserver(activities: .allActivities) { _, _ in }, forMode: mode)
                loop.add(unsignalledSource(), forMode: mode)
                let sourcesOnly = loop.limitDate(forMode: mode)
                let earliest = Date() + 3_600.000_000_7
                loop.add(try Timer(fire: earliest + 10, interval: 0, repeats: false) { _ in }, forMode: mode)
                loop.add(try Timer(fire: earliest, interval: 5, repeats: true) { _ in }, forMode: mode)
                return (empty, common, sourcesOnly, loop.limitDate(forMode: mode), earliest)
            }
        #expect(empty == nil)
        #expect(common == nil)
        #expect(sourcesOnly == .distantFuture)
        #expect(withTimers == earliest)
    }

    @Test("S-RUN-10: it makes one polling pass: signalled sources and due timers are serviced, observers see entry and exit")
    func pollsOnce() throws {
        let log = EventLog()
        let (limit, next) = try onNewThread { () -> (Date?, Date) in
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            let mode = RunLoop.Mode("S-RUN-10.poll")
            loop.add(RunLoopObserver(activities: [.entry, .beforeWaiting, .exit]) { _, activity in log.add("\(activity)") }, forMode: mode)
            let source = CustomSource { log.add("source") }
            loop.add(source, forMode: mode)
            source.signal()
            let start = clock.now
            loop.add(try Timer(fire: start + 1, interval: 1, repeats: true) { _ in log.add("timer") }, forMode: mode)
            clock.advance(by: .milliseconds(1500))
            return (loop.limitDate(forMode: mode), start + 2)
        }
        // A poll never waits, so beforeWaiting is not told (S-RUN-2 step 7).
        #expect(log.all == ["entry", "source", "timer", "exit"])
        #expect(limit == next, "after firing, the repeating timer's next date is the limit")
    }
}
