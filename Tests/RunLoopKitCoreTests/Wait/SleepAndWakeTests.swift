// A loop's sleep and its wake-ups: wakeUp() makes a sleeping loop pass
// once and is never lost (S-RUN-7); an idle loop sleeps, costing no pass
// and no CPU (S-RUN-9).
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("A loop's sleep and wake-ups (S-RUN-7, S-RUN-9)", .blocksThreads)
struct SleepAndWakeTests {
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

    @Test("S-RUN-7: a wake-up from before a run began is answered by its first pass, not by a sleep that ends at once")
    func wakeUpBeforeRunCostsNoPass() throws {
        let events = EventLog()
        let result = try onNewThread(timeout: 30) { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            loop.add(unsignalledSource(), forMode: .default)
            recordActivities(of: loop, mode: .default, into: events)
            loop.wakeUp()
            return loop.run(mode: .default, seconds: 0.2)
        }
        #expect(result == .timedOut)
        #expect(events.all == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"])
    }

    @Test("S-RUN-7: a nested run forgets a wake-up from before it began, and gives it back to the pass it interrupted")
    func nestedRunGivesWakeUpBack() throws {
        let outer = EventLog()
        let inner = EventLog()
        let innerMode = RunLoop.Mode("inner")
        let result = try onNewThread(timeout: 30) { () -> RunLoop.RunResult in
            let loop = RunLoop.current
            loop.add(unsignalledSource(), forMode: .default)
            loop.add(unsignalledSource(), forMode: innerMode)
            recordActivities(of: loop, mode: .default, into: outer)
            recordActivities(of: loop, mode: innerMode, into: inner)
            let passes = Counter()
            // The wake-up comes after the outer pass's beforeTimers: it is
            // that pass's to answer, so it is given back, the pass's sleep
            // ends at once, and the next pass stops the run.
            let nester = RunLoopObserver(activities: [.beforeTimers, .beforeSources], order: 1) { _, activity in
                let pass = activity == .beforeTimers ? passes.increment() : passes.value
                if pass == 2 { return loop.stop() }
                guard activity == .beforeSources else { return }
                loop.wakeUp()
                outer.add("nested run: \(loop.run(mode: innerMode, seconds: 0.2))")
            }
            loop.add(nester, forMode: .default)
            return loop.run(mode: .default, seconds: 10)
        }
        #expect(result == .stopped)
        #expect(inner.all == ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"])
        #expect(outer.all == [
            "entry", "beforeTimers", "beforeSources", "nested run: timedOut", "beforeWaiting", "afterWaiting",
            "beforeTimers", "exit",
        ])
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
