// Custom sources (Source0): S-SRC0-1 to S-SRC0-3.
import Dispatch
import Glibc
import Testing
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("Custom sources (Source0)", .blocksThreads)
struct CustomSourceTests {
    // MARK: S-SRC0-1

    @Test("S-SRC0-1: signalled sources are performed in ascending order, then in the order they were added")
    func performOrder() throws {
        let events = EventLog()
        try onNewThread {
            let loop = RunLoop.current
            let sources = [
                CustomSource(order: 2) { events.add("order 2") },
                CustomSource(order: 1) { events.add("order 1, added first") },
                CustomSource(order: 0) { events.add("order 0") },
                CustomSource(order: 1) { events.add("order 1, added second") },
                CustomSource(order: -5) { events.add("order -5") },
            ]
            for source in sources { loop.add(source, forMode: .default) }
            for source in sources.reversed() { source.signal() }
            loop.run(mode: .default, seconds: 0)
        }
        #expect(events.all == ["order -5", "order 0", "order 1, added first", "order 1, added second", "order 2"])
    }

    @Test("S-SRC0-1: a source fires only after signal(); an unsignalled source never performs")
    func firesOnlyAfterSignal() throws {
        let performs = try onNewThread { () -> [Int] in
            let loop = RunLoop.current
            let count = Counter()
            let source = CustomSource { count.increment() }
            loop.add(source, forMode: .default)
            loop.run(mode: .default, seconds: 0)
            loop.run(mode: .default, seconds: 0.02)
            let unsignalled = count.value
            source.signal()
            loop.run(mode: .default, seconds: 0)
            return [unsignalled, count.value]
        }
        #expect(performs == [0, 1])
    }

    @Test("S-SRC0-1: signal() alone does not wake a sleeping loop; wakeUp() then makes it perform")
    func signalDoesNotWake() throws {
        let events = EventLog()
        let performed = DispatchSemaphore(value: 0)
        let loopHandoff = Handoff<(RunLoop, CustomSource)>()
        let thread = SpawnedThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events)
            let source = CustomSource {
                events.add("source0")
                performed.signal()
            }
            loop.add(source, forMode: .default)
            loopHandoff.put((loop, source))
            return loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: true)
        }
        let (loop, source) = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        let passes = loop.passesCompleted
        source.signal()
        // Waiting for something that must not happen needs a window.
        #expect(performed.wait(timeout: .now() + 0.3) == .timedOut, "signal() alone woke the loop")
        #expect(loop.isWaiting)
        #expect(loop.passesCompleted == passes)
        #expect(source.isSignalled)
        loop.wakeUp()
        #expect(try thread.join() == .handledSource)
        #expect(!source.isSignalled)
        #expect(events.all == [
            "entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting",
            "beforeTimers", "beforeSources", "source0", "exit",
        ])
    }

    @Test("S-SRC0-1: signalAndWakeUp() from another thread wakes the loop, and perform runs on the loop's thread")
    func signalAndWakeUpWakes() throws {
        let loopHandoff = Handoff<(RunLoop, CustomSource)>()
        let thread = SpawnedThread { () -> (RunLoop.RunResult, Int32, Int32) in
            let loop = RunLoop.current
            let performedOn = Locked<Int32>(0)
            let source = CustomSource { performedOn.value = currentThreadID() }
            loop.add(source, forMode: .default)
            loopHandoff.put((loop, source))
            let result = loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: true)
            return (result, performedOn.value, currentThreadID())
        }
        let (loop, source) = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        source.signalAndWakeUp()
        let (result, performedOn, loopThread) = try thread.join()
        #expect(result == .handledSource)
        #expect(performedOn == loopThread)
        #expect(performedOn != currentThreadID())
    }

    @Test("S-SRC0-1: signalAndWakeUp() wakes every loop the source is in; it fires once, in one of them")
    func signalAndWakeUpWakesEveryLoop() throws {
        let performs = Counter()
        let source = CustomSource { performs.increment() }
        let loops = Locked<[RunLoop]>([])
        let sleeps = [Counter(), Counter()]
        let threads = (0..<2).map { index in
            SpawnedThread { () -> RunLoop.RunResult in
                let loop = RunLoop.current
                let observer = RunLoopObserver(activities: .beforeWaiting) { _, _ in sleeps[index].increment() }
                loop.add(observer, forMode: .default)
                loop.add(source, forMode: .default)
                loops.withLock { $0.append(loop) }
                return loop.run(mode: .default, seconds: 30)
            }
        }
        #expect(waitUntil { loops.value.count == 2 && loops.value.allSatisfy(\.isWaiting) })
        let sleptBefore = sleeps.map(\.value)
        source.signalAndWakeUp()
        // Each loop woke, passed through its sources and went back to sleep.
        #expect(waitUntil {
            zip(sleeps, sleptBefore).allSatisfy { $0.value > $1 } && loops.value.allSatisfy(\.isWaiting)
        })
        for loop in loops.value { loop.stop() }
        let results = try threads.map { try $0.join() }
        #expect(results == [.stopped, .stopped])
        #expect(performs.value == 1)
    }

    @Test("S-SRC0-1: schedule is called for each mode joined and cancel for each mode left, with the loop")
    func scheduleAndCancelHandlers() throws {
        let events = EventLog()
        let (sameLoop, scheduledOnAddingThread) = try onNewThread { () -> (Bool, Bool) in
            let loop = RunLoop.current
            let me = currentThreadID()
            let seenLoops = Locked<[ObjectIdentifier]>([])
            let onAddingThread = Locked(true)
            let source = CustomSource(
                schedule: { scheduledLoop, mode in
                    events.add("schedule \(mode)")
                    seenLoops.withLock { $0.append(ObjectIdentifier(scheduledLoop)) }
                    if currentThreadID() != me { onAddingThread.value = false }
                },
                cancel: { cancelledLoop, mode in
                    events.add("cancel \(mode)")
                    seenLoops.withLock { $0.append(ObjectIdentifier(cancelledLoop)) }
                },
                perform: {})
            loop.add(source, forMode: "S-SRC0-1.a")
            loop.add(source, forMode: "S-SRC0-1.a")  // already there: no second schedule
            loop.add(source, forMode: "S-SRC0-1.b")
            loop.remove(source, forMode: "S-SRC0-1.a")
            loop.remove(source, forMode: "S-SRC0-1.a")  // not there any more: no second cancel
            events.add("thread exits")
            // S-THR-3: the teardown at thread exit cancels the source in "b".
            return (seenLoops.value.allSatisfy { $0 == ObjectIdentifier(loop) }, onAddingThread.value)
        }
        #expect(sameLoop)
        #expect(scheduledOnAddingThread)
        #expect(events.all == [
            "schedule S-SRC0-1.a", "schedule S-SRC0-1.b", "cancel S-SRC0-1.a", "thread exits", "cancel S-SRC0-1.b",
        ])
    }

    // MARK: S-SRC0-2

    @Test("S-SRC0-2: several signals before the source fires make one perform")
    func signalsCoalesce() throws {
        let performs = try onNewThread { () -> [Int] in
            let loop = RunLoop.current
            let count = Counter()
            let source = CustomSource { count.increment() }
            loop.add(source, forMode: .default)
            for _ in 0..<5 { source.signal() }
            loop.run(mode: .default, seconds: 0)
            let afterFirst = count.value
            loop.run(mode: .default, seconds: 0)
            return [afterFirst, count.value]
        }
        #expect(performs == [1, 1])
    }

    @Test("S-SRC0-2: many signals from another thread while the loop sleeps, then one wake-up, make one perform")
    func signalsFromAnotherThreadCoalesce() throws {
        let count = Counter()
        let loopHandoff = Handoff<(RunLoop, CustomSource)>()
        let thread = SpawnedThread { () -> [Int] in
            let loop = RunLoop.current
            let source = CustomSource { count.increment() }
            loop.add(source, forMode: .default)
            loopHandoff.put((loop, source))
            loop.run(mode: .default, seconds: 30, returnAfterSourceHandled: true)
            let afterWake = count.value
            loop.run(mode: .default, seconds: 0)  // nothing is left signalled
            return [afterWake, count.value]
        }
        let (loop, source) = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        for _ in 0..<100 { source.signal() }
        loop.wakeUp()
        #expect(try thread.join() == [1, 1])
    }

    @Test("S-SRC0-2: a source is unsignalled just before its perform, so the perform may signal it again")
    func performMaySignalAgain() throws {
        let events = EventLog()
        let result = try onNewThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            recordActivities(of: loop, mode: .default, into: events, activities: [.entry, .beforeSources, .beforeWaiting, .exit])
            let selfReference = Locked<CustomSource?>(nil)
            let count = Counter()
            let source = CustomSource {
                let me = selfReference.value!
                let n = count.increment()
                events.add("perform \(n), signalled: \(me.isSignalled)")
                if n < 3 { me.signal() } else { loop.stop() }
            }
            selfReference.value = source
            // Breaks the cycle source → its closure → selfReference → source,
            // which would keep the loop alive after its thread exits.
            defer { selfReference.value = nil }
            loop.add(source, forMode: .default)
            source.signal()
            return loop.run(mode: .default, seconds: 30)
        }
        #expect(result == .stopped)
        // No beforeWaiting: each pass handled a source, so the loop never slept.
        #expect(events.all == [
            "entry",
            "beforeSources", "perform 1, signalled: false",
            "beforeSources", "perform 2, signalled: false",
            "beforeSources", "perform 3, signalled: false",
            "exit",
        ])
    }

    // MARK: S-SRC0-3

    @Test("S-SRC0-3: invalidate() calls cancel for every mode, removes the source, and it never fires again")
    func invalidateCancelsAndNeverFires() throws {
        let events = EventLog()
        let (contained, results, valid) = try onNewThread { () -> ([Bool], [RunLoop.RunResult], Bool) in
            let loop = RunLoop.current
            let source = CustomSource(
                schedule: { _, mode in events.add("schedule \(mode)") },
                cancel: { _, mode in events.add("cancel \(mode)") },
                perform: { events.add("performed") })
            loop.add(source, forMode: .default)
            loop.add(source, forMode: "S-SRC0-3.other")
            loop.add(unsignalledSource(), forMode: .default)
            source.signal()
            source.invalidate()
            source.invalidate()  // idempotent: no second round of cancels
            source.signal()
            loop.add(source, forMode: .default)  // an invalid source cannot come back
            let results = [
                loop.run(mode: .default, seconds: 0),
                loop.run(mode: "S-SRC0-3.other", seconds: 0),  // now empty
            ]
            return (
                [loop.contains(source, inMode: .default), loop.contains(source, inMode: "S-SRC0-3.other")], results,
                source.isValid)
        }
        #expect(!valid)
        #expect(contained == [false, false])
        #expect(results == [.timedOut, .finished])
        let log = events.all
        #expect(Array(log.prefix(2)) == ["schedule kCFRunLoopDefaultMode", "schedule S-SRC0-3.other"])
        #expect(Set(log.dropFirst(2)) == ["cancel kCFRunLoopDefaultMode", "cancel S-SRC0-3.other"])
        #expect(log.count == 4, "no perform, no second cancel: \(log)")
    }

    @Test("S-SRC0-3: invalidate() from another thread while the loop sleeps on that source alone ends the run finished")
    func invalidateFromAnotherThreadEmptiesMode() throws {
        let cancelled = EventLog()
        let loopHandoff = Handoff<(RunLoop, CustomSource)>()
        let thread = SpawnedThread { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            let source = CustomSource(cancel: { _, mode in cancelled.add(mode.rawValue) }) {}
            loop.add(source, forMode: .default)
            loopHandoff.put((loop, source))
            return loop.run(mode: .default, seconds: 30)
        }
        let (loop, source) = try loopHandoff.take()
        #expect(waitUntil { loop.isWaiting })
        source.signal()
        source.invalidate()
        #expect(try thread.join() == .finished)
        #expect(cancelled.all == ["kCFRunLoopDefaultMode"])
    }

    @Test("S-SRC0-3: a source invalidated by an earlier source of the same pass is not performed")
    func invalidatedDuringPassIsNotPerformed() throws {
        let events = EventLog()
        try onNewThread {
            let loop = RunLoop.current
            let victim = CustomSource(order: 1) { events.add("victim performed") }
            let killer = CustomSource(order: 0) {
                events.add("killer")
                victim.invalidate()
            }
            loop.add(killer, forMode: .default)
            loop.add(victim, forMode: .default)
            killer.signal()
            victim.signal()
            loop.run(mode: .default, seconds: 0)
        }
        #expect(events.all == ["killer"])
    }
}
