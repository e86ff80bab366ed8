// Modes: S-MODE-1 to S-MODE-6.
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("Modes", .blocksThreads)
struct ModeTests {
    // MARK: S-MODE-1

    @Test("S-MODE-1: a mode is made on first use by name and never removed")
    func modesAreMadeOnFirstUseAndKept() throws {
        let (before, whileUsed, afterRemoval, sameName) = try onNewThread {
            let loop = RunLoop.current
            let before = loop.allModes
            let source = unsignalledSource()
            loop.add(source, forMode: "S-MODE-1.custom")
            let whileUsed = loop.allModes
            loop.remove(source, forMode: "S-MODE-1.custom")
            let afterRemoval = loop.allModes
            // The same name is the same mode.
            loop.add(source, forMode: RunLoop.Mode(rawValue: "S-MODE-1.custom"))
            let sameName = loop.contains(source, inMode: "S-MODE-1.custom")
            return (before, whileUsed, afterRemoval, sameName)
        }
        #expect(!before.contains("S-MODE-1.custom"))
        #expect(whileUsed.contains("S-MODE-1.custom"))
        #expect(afterRemoval.contains("S-MODE-1.custom"), "modes are never removed")
        #expect(sameName)
    }

    @Test("S-MODE-1: twenty modes (past the eight a loop finds by comparing names, then by an index): each keeps its own items, a name made again finds the same mode, and allModes lists them in the order first used; commonModes in the order marked, .default first")
    func manyModesKeepTheirItems() throws {
        let names = (0..<20).map { RunLoop.Mode("S-MODE-1.many-\($0)") }
        let (held, elsewhere, allModes, commonModes) = try onNewThread { () -> ([Bool], Int, [RunLoop.Mode], [RunLoop.Mode]) in
            let loop = RunLoop.current
            let timers = names.map { _ in distantTimer() }
            for (name, timer) in zip(names, timers) { loop.add(timer, forMode: name) }
            for name in names.reversed().prefix(3) { loop.addCommonMode(name) }
            // Names made anew from the same strings: the same modes.
            let held = zip(names, timers).map { name, timer in loop.contains(timer, inMode: RunLoop.Mode(String(name.rawValue))) }
            let elsewhere = zip(names, timers).reduce(0) { count, pair in
                count + names.filter { $0 != pair.0 && loop.contains(pair.1, inMode: $0) }.count
            }
            for timer in timers { timer.invalidate() }
            return (held, elsewhere, loop.allModes, loop.commonModes)
        }
        #expect(held == Array(repeating: true, count: names.count))
        #expect(elsewhere == 0, "a timer found in a mode it was not added to")
        #expect(allModes.filter { names.contains($0) } == names)
        #expect(commonModes == [.default] + names.reversed().prefix(3))
    }

    @Test("S-MODE-1: a mode holds Source0s, Source1s, timers and observers of its own")
    func modeHoldsEveryKindOfItem() throws {
        let contained = try onNewThread { () -> [Bool] in
            let loop = RunLoop.current
            let mode: RunLoop.Mode = "S-MODE-1.set"
            let source = unsignalledSource()
            let timer = distantTimer()
            let observer = RunLoopObserver(activities: .entry) { _, _ in }
            let pipeFDs = try makePipe()
            defer { close(pipeFDs.read); close(pipeFDs.write) }
            let fdSource = SocketSource(fileDescriptor: pipeFDs.read) { _, _ in }
            loop.add(source, forMode: mode)
            loop.add(timer, forMode: mode)
            loop.add(observer, forMode: mode)
            try loop.add(fdSource, forMode: mode)
            let inMode = [
                loop.contains(source, inMode: mode), loop.contains(timer, inMode: mode),
                loop.contains(observer, inMode: mode), loop.contains(fdSource, inMode: mode),
            ]
            let inDefault = [
                loop.contains(source, inMode: .default), loop.contains(timer, inMode: .default),
                loop.contains(observer, inMode: .default), loop.contains(fdSource, inMode: .default),
            ]
            fdSource.invalidate()
            return inMode + inDefault
        }
        #expect(contained == [true, true, true, true, false, false, false, false])
    }

    // MARK: S-MODE-2

    @Test("S-MODE-2, S-TMR-7: a run services only its mode; a signalled source, a due timer and a block of another mode wait and are not lost")
    func onlyTheRunningModeIsServiced() throws {
        let events = EventLog()
        // On a test clock: A's timer is due from the start, and B's 50 ms run
        // sleeps while the clock moves on by 50 ms, without waiting for real time.
        let results = try TestClockThread<[RunLoop.RunResult]>.run(named: "mode-only") { clock, loop in
            let modeA: RunLoop.Mode = "S-MODE-2.A"
            let modeB: RunLoop.Mode = "S-MODE-2.B"
            recordActivities(of: loop, mode: modeA, into: events, prefix: "A:", activities: [.entry, .exit])
            recordActivities(of: loop, mode: modeB, into: events, prefix: "B:", activities: [.entry, .exit])
            clock.advanceWhenIdle(loop, by: .milliseconds(50), mode: modeB)
            let sourceA = CustomSource { events.add("sourceA") }
            loop.add(sourceA, forMode: modeA)
            let timerA = try RunLoopKitCore.Timer(fire: clock.now, interval: 0, repeats: false) { _ in events.add("timerA") }
            loop.add(timerA, forMode: modeA)
            loop.perform(inModes: [modeA]) { events.add("blockA") }
            loop.add(unsignalledSource(), forMode: modeB)
            sourceA.signal()

            // B polls several times: nothing of A runs, and A's timer is due all along.
            var results: [RunLoop.RunResult] = []
            for _ in 0..<3 { results.append(loop.run(mode: modeB, seconds: 0)) }
            results.append(loop.run(mode: modeB, seconds: 0.05))
            // Then A: everything that waited runs, once.
            results.append(loop.run(mode: modeA, seconds: 0))
            results.append(loop.run(mode: modeA, seconds: 0))
            return results
        }
        #expect(results == [.timedOut, .timedOut, .timedOut, .timedOut, .timedOut, .timedOut])
        #expect(events.all == [
            "B:entry", "B:exit", "B:entry", "B:exit", "B:entry", "B:exit", "B:entry", "B:exit",
            "A:entry", "blockA", "sourceA", "timerA", "A:exit",
            "A:entry", "A:exit",
        ])
    }

    @Test("S-MODE-2: observers of other modes are not notified")
    func observersOfOtherModesAreNotNotified() throws {
        let events = EventLog()
        _ = try onNewThread {
            let loop = RunLoop.current
            recordActivities(of: loop, mode: "S-MODE-2.other", into: events, prefix: "other:")
            recordActivities(of: loop, mode: .default, into: events, prefix: "default:", activities: [.entry, .exit])
            loop.add(unsignalledSource(), forMode: .default)
            loop.add(unsignalledSource(), forMode: "S-MODE-2.other")
            loop.run(mode: .default, seconds: 0)
        }
        #expect(events.all == ["default:entry", "default:exit"])
    }

    // MARK: S-MODE-3

    @Test("S-MODE-3: the default mode is always common; an item added to common is in every common mode")
    func commonItemsAreInEveryCommonMode() throws {
        let scheduled = EventLog()
        let (commonModes, contained, performedIn) = try onNewThread { () -> ([RunLoop.Mode], [Bool], [String]) in
            let loop = RunLoop.current
            loop.addCommonMode("S-MODE-3.early")
            let performedIn = EventLog()
            let source = CustomSource(schedule: { _, mode in scheduled.add(mode.rawValue) }) {
                performedIn.add(loop.currentMode?.rawValue ?? "none")
            }
            loop.add(source, forMode: .common)
            let timer = distantTimer()
            loop.add(timer, forMode: .common)
            let observer = RunLoopObserver(activities: .entry) { _, _ in }
            loop.add(observer, forMode: .common)
            let contained = [RunLoop.Mode.default, "S-MODE-3.early", "S-MODE-3.plain"].flatMap { mode in
                [
                    loop.contains(source, inMode: mode), loop.contains(timer, inMode: mode),
                    loop.contains(observer, inMode: mode),
                ]
            } + [loop.contains(source, inMode: .common)]
            source.signal()
            loop.run(mode: "S-MODE-3.early", seconds: 0)
            source.signal()
            loop.run(mode: .default, seconds: 0)
            return (loop.commonModes, contained, performedIn.all)
        }
        #expect(Set(commonModes) == [.default, "S-MODE-3.early"])
        #expect(contained == [true, true, true, true, true, true, false, false, false, true])
        #expect(Set(scheduled.all) == ["kCFRunLoopDefaultMode", "S-MODE-3.early"])
        #expect(scheduled.count == 2, "schedule runs once per mode joined")
        #expect(performedIn == ["S-MODE-3.early", "kCFRunLoopDefaultMode"])
    }

    @Test("S-MODE-3: a mode marked common later (addCommonMode) gets every common item, Source0, Source1, timer and observer alike")
    func addCommonModeLaterBringsCommonItems() throws {
        let events = EventLog()
        let endpoint = uniqueEndpoint("mode3")
        let receiver = try ZMQContext.shared.makeSocket(.pair)
        try receiver.bind(endpoint)
        let sender = try ZMQContext.shared.makeSocket(.pair)
        try sender.connect(endpoint)
        let socketSource = SocketSource(socket: receiver) { _, socket in
            if let frames = try? socket.receiveMultipart(dontWait: true) {
                events.add("source1 " + String(decoding: frames[0], as: UTF8.self))
            }
        }
        #expect(try sender.send("ping"))

        // The real clock (S-TMR-7): the timer is due at once, so no time
        // needs to pass, and the run's 30 s deadline bounds a wait for the
        // ZeroMQ message, which a test-clock deadline would not bound (a
        // safety net: the run returns once the message is handled).
        let (containedBefore, containedAfter, results) = try onNewThread {
            () -> ([Bool], [Bool], [RunLoop.RunResult]) in
            let loop = RunLoop.current
            let late: RunLoop.Mode = "S-MODE-3.late"
            let source = CustomSource(schedule: { _, mode in events.add("schedule \(mode)") }) { events.add("source0") }
            let timer = try RunLoopKitCore.Timer(timeInterval: 0, repeats: false) { _ in events.add("timer") }
            loop.add(source, forMode: .common)
            loop.add(timer, forMode: .common)
            try loop.add(socketSource, forMode: .common)
            recordActivities(of: loop, mode: .common, into: events, activities: [.entry, .exit])
            let containedBefore = [
                loop.contains(source, inMode: late), loop.contains(timer, inMode: late),
                loop.contains(socketSource, inMode: late),
            ]
            source.signal()
            events.add("run before addCommonMode")
            let before = loop.run(mode: late, seconds: 0)  // empty: nothing runs, nothing is notified
            loop.addCommonMode(late)
            let containedAfter = [
                loop.contains(source, inMode: late), loop.contains(timer, inMode: late),
                loop.contains(socketSource, inMode: late),
            ]
            events.add("run after addCommonMode")
            var results = [before]
            // The timer fires and the source performs in the first pass; the
            // socket event may take a pass of its own.
            results.append(loop.run(mode: late, seconds: 0))
            if events.count(of: "source1 ping") == 0 { results.append(loop.run(mode: late, seconds: 30, returnAfterSourceHandled: true)) }
            socketSource.invalidate()
            return (containedBefore, containedAfter, results)
        }
        #expect(containedBefore == [false, false, false])
        #expect(containedAfter == [true, true, true])
        #expect(results.first == .finished)
        let log = events.all
        #expect(Array(log.prefix(3)) == [
            "schedule kCFRunLoopDefaultMode", "run before addCommonMode", "schedule S-MODE-3.late",
        ])
        #expect(log.dropFirst(3).first == "run after addCommonMode")
        #expect(log.contains("source0"))
        #expect(log.contains("timer"))
        #expect(log.contains("source1 ping"))
        #expect(log.filter { $0 == "entry" }.count == log.filter { $0 == "exit" }.count)
        #expect(log.contains("entry"), "the common observer is notified in the late mode")
    }

    @Test("S-MODE-3: removing an item from common removes it from every common mode")
    func removingFromCommonLeavesEveryCommonMode() throws {
        let cancelled = EventLog()
        let contained = try onNewThread { () -> [Bool] in
            let loop = RunLoop.current
            loop.addCommonMode("S-MODE-3.extra")
            let source = CustomSource(cancel: { _, mode in cancelled.add(mode.rawValue) }) {}
            loop.add(source, forMode: .common)
            loop.remove(source, forMode: .common)
            return [
                loop.contains(source, inMode: .common), loop.contains(source, inMode: .default),
                loop.contains(source, inMode: "S-MODE-3.extra"),
            ]
        }
        #expect(contained == [false, false, false])
        #expect(Set(cancelled.all) == ["kCFRunLoopDefaultMode", "S-MODE-3.extra"])
        #expect(cancelled.count == 2)
    }

    // MARK: S-MODE-4

    @Test("S-MODE-4: running the common pseudo-mode returns finished at once, notifying nobody and servicing nothing")
    func runningCommonReturnsFinished() throws {
        let events = EventLog()
        let (result, started, elapsed) = try onNewThread { () -> (RunLoop.RunResult, Bool, Double) in
            let loop = RunLoop.current
            let source = CustomSource { events.add("performed") }
            loop.add(source, forMode: .common)
            recordActivities(of: loop, mode: .common, into: events)
            source.signal()
            let start = DispatchTime.now()
            let result = loop.run(mode: .common, seconds: 10)
            let started = loop.run(mode: .common, before: Date(timeIntervalSinceNow: 10))
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
            return (result, started, elapsed)
        }
        #expect(result == .finished)
        #expect(started == false)
        #expect(events.all.isEmpty)
        #expect(elapsed < 5, "returns at once, not at the 10 s deadline")
    }

    // MARK: S-MODE-5

    @Test("S-MODE-5: a run keeps its mode for every pass; to service another mode it must return and a new run start")
    func modeDoesNotChangeWithinARun() throws {
        let events = EventLog()
        let results = try onNewThread { () -> [RunLoop.RunResult] in
            let loop = RunLoop.current
            let modeA: RunLoop.Mode = "S-MODE-5.A"
            let modeB: RunLoop.Mode = "S-MODE-5.B"
            let sourceB = CustomSource { events.add("sourceB in \(loop.currentMode?.rawValue ?? "none")") }
            loop.add(sourceB, forMode: modeB)
            let passes = Counter()
            let sourceA = CustomSource {
                events.add("sourceA in \(loop.currentMode?.rawValue ?? "none")")
                sourceB.signalAndWakeUp()
                if passes.increment() == 3 { loop.stop() }
            }
            loop.add(sourceA, forMode: modeA)
            // sourceA is signalled again before each of three passes in a row.
            let observer = RunLoopObserver(activities: .beforeSources) { _, _ in
                if passes.value < 3 { sourceA.signal() }
            }
            loop.add(observer, forMode: modeA)
            let first = loop.run(mode: modeA, seconds: 10)
            let second = loop.run(mode: modeB, seconds: 0)
            return [first, second]
        }
        #expect(results == [.stopped, .timedOut])
        #expect(events.all == [
            "sourceA in S-MODE-5.A", "sourceA in S-MODE-5.A", "sourceA in S-MODE-5.A", "sourceB in S-MODE-5.B",
        ])
    }

    // MARK: S-MODE-6

    @Test("S-MODE-6: currentMode is the running mode while the loop runs, from inside and from other threads, and nil otherwise")
    func currentModeWhileRunning() throws {
        let mode: RunLoop.Mode = "S-MODE-6.mode"
        let inside = Locked<[RunLoop.Mode?]>([])
        let loopHandoff = Handoff<RunLoop>()
        let thread = SpawnedThread { () -> (RunLoop.Mode?, RunLoop.Mode?, RunLoop.RunResult) in
            let loop = RunLoop.current
            let before = loop.currentMode
            let source = CustomSource { inside.withLock { $0.append(loop.currentMode) } }
            loop.add(source, forMode: mode)
            let observer = RunLoopObserver(activities: [.entry, .exit]) { _, _ in
                inside.withLock { $0.append(loop.currentMode) }
            }
            loop.add(observer, forMode: mode)
            source.signal()
            loopHandoff.put(loop)
            let result = loop.run(mode: mode, seconds: 30)
            return (before, loop.currentMode, result)
        }
        let loop = try loopHandoff.take()
        // Seen from this thread while the loop sleeps in `mode`.
        #expect(waitUntil { loop.isWaiting })
        #expect(loop.currentMode == mode)
        loop.stop()
        let (before, after, result) = try thread.join()
        #expect(before == nil)
        #expect(after == nil)
        #expect(result == .stopped)
        #expect(inside.value == [mode, mode, mode])
        #expect(loop.currentMode == nil)
    }
}
