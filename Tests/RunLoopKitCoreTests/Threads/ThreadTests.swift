// Run loops and threads: S-THR-1 to S-THR-5.
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("Run loops and threads", .blocksThreads)
struct ThreadTests {
    // MARK: S-THR-1

    @Test("S-THR-1: a thread has exactly one loop; `current` and `forCurrentThread()` return it every time")
    func oneLoopPerThread() throws {
        let (sameEveryTime, sameThroughThrowingAccessor) = try onNewThread {
            let first = RunLoop.current
            let again = RunLoop.current
            let throwing = try RunLoop.forCurrentThread()
            return (first === again, first === throwing)
        }
        #expect(sameEveryTime)
        #expect(sameThroughThrowingAccessor)
        // Another thread gets a different loop, even if it asks while the first is alive.
        let firstLoop = Handoff<RunLoop>()
        let gate = DispatchSemaphore(value: 0)
        let holder = SpawnedThread {
            firstLoop.put(RunLoop.current)
            _ = gate.wait(timeout: .now() + 30)  // keep the thread (and its loop) alive
        }
        let held = try firstLoop.take()
        let other = try onNewThread { RunLoop.current }
        gate.signal()
        try holder.join()
        #expect(held !== other)
    }

    @Test("S-THR-1: the loop is made lazily, only when its thread asks for it")
    func loopIsMadeLazily() async {
        // In a process of its own, so that no parallel test makes loops meanwhile.
        await #expect(processExitsWith: .success) {
            let before = RunLoop.liveCount.load(ordering: .relaxed)
            let duringQuietThread = try onNewThread {
                // This thread never asks for its loop.
                RunLoop.liveCount.load(ordering: .relaxed)
            }
            guard duringQuietThread == before else { exit(2) }
            let duringAskingThread = try onNewThread {
                _ = RunLoop.current
                return RunLoop.liveCount.load(ordering: .relaxed)
            }
            guard duringAskingThread == before + 1 else { exit(3) }
            // And the loop went with its thread (S-THR-3).
            guard RunLoop.liveCount.load(ordering: .relaxed) == before else { exit(4) }
        }
    }

    @Test("S-THR-1: asking a plain thread for its LoopThread name does not make it a loop")
    func loopThreadNameQueryMakesNoLoop() async {
        await #expect(processExitsWith: .success) {
            let before = RunLoop.liveCount.load(ordering: .relaxed)
            let (name, during) = try onNewThread {
                (LoopThread.currentName, RunLoop.liveCount.load(ordering: .relaxed))
            }
            guard name == nil else { exit(2) }
            guard during == before else { exit(3) }
        }
    }

    // MARK: S-THR-2

    @Test("S-THR-2: the main loop is reachable from any thread and is one object")
    func mainLoopFromAnyThread() throws {
        let fromFirst = try onNewThread { RunLoop.main }
        let (fromSecond, ownIsMain) = try onNewThread { (RunLoop.main, RunLoop.current === RunLoop.main) }
        #expect(fromFirst === fromSecond)
        #expect(fromFirst === RunLoop.main)
        #expect(!ownIsMain, "a secondary thread's own loop is not the main loop")
        #expect(RunLoop.main.threadName == "main")
    }

    @Test("S-THR-2: the main loop can be used from another thread: blocks performed on it are accepted")
    func mainLoopAcceptsWorkFromOtherThreads() throws {
        // Nothing runs the main loop during tests, so queue for a mode nobody
        // runs, and only check that the main loop accepts it (it is not torn down).
        let accepted = try onNewThread {
            RunLoop.main.perform(inModes: ["S-THR-2.never-run"]) {}
        }
        #expect(accepted)
        #expect(!RunLoop.main.hasThreadExited)
    }

    // MARK: S-THR-3

    @Test("S-THR-3: a loop is torn down at thread exit: cancel handlers run, timers, observers and socket sources are invalidated")
    func teardownAtThreadExit() throws {
        let events = EventLog()
        let timer = distantTimer()
        let observer = RunLoopObserver(activities: .allActivities) { _, _ in }
        let pipeFDs = try makePipe()
        defer { close(pipeFDs.read); close(pipeFDs.write) }
        let fdSource = SocketSource(fileDescriptor: pipeFDs.read) { _, _ in }
        let source = CustomSource(
            schedule: { _, mode in events.add("schedule \(mode)") },
            cancel: { _, mode in events.add("cancel \(mode)") },
            perform: {})
        let weakLoop = try onNewThread { () -> WeakLoopBox in
            let loop = RunLoop.current
            loop.add(source, forMode: .default)
            loop.add(timer, forMode: .default)
            loop.add(observer, forMode: .default)
            try loop.add(fdSource, forMode: .default)
            loop.run(mode: .default, seconds: 0)
            events.add("thread exits")
            return WeakLoopBox(loop)
        }
        #expect(events.all == ["schedule kCFRunLoopDefaultMode", "thread exits", "cancel kCFRunLoopDefaultMode"])
        #expect(!timer.isValid)
        #expect(!observer.isValid)
        #expect(!fdSource.isValid)
        #expect(weakLoop.loop == nil, "nothing keeps a dead thread's loop alive")
    }

    @Test("S-THR-3: a reference to the loop of an exited thread is harmless: wake, stop, add and perform do nothing")
    func deadLoopReferenceIsHarmless() throws {
        let loop = try onNewThread { () -> RunLoop in
            let loop = RunLoop.current
            loop.add(unsignalledSource(), forMode: .default)
            loop.run(mode: .default, seconds: 0)
            return loop
        }
        #expect(loop.hasThreadExited)
        loop.wakeUp()
        loop.wakeUp()
        loop.stop()
        loop.addCommonMode("S-THR-3.later")

        let ran = Counter()
        #expect(loop.perform { ran.increment() } == false, "perform on a dead loop returns false")
        #expect(loop.perform(inModes: [.default]) { ran.increment() } == false)
        #expect(throws: RunLoopError.loopGone(threadName: loop.threadName)) {
            try loop.performAndWait(timeout: .seconds(5)) { ran.increment() }
        }

        let scheduled = Counter()
        let source = CustomSource(schedule: { _, _ in scheduled.increment() }, perform: { ran.increment() })
        loop.add(source, forMode: .default)
        #expect(scheduled.value == 0, "a dead loop does not take sources")
        #expect(!loop.contains(source, inMode: .default))

        let timer = distantTimer()
        loop.add(timer, forMode: .default)
        #expect(!loop.contains(timer, inMode: .default))
        #expect(timer.isValid)

        let observer = RunLoopObserver(activities: .allActivities) { _, _ in }
        loop.add(observer, forMode: .default)
        #expect(!loop.contains(observer, inMode: .default))

        let pipeFDs = try makePipe()
        defer { close(pipeFDs.read); close(pipeFDs.write) }
        let fdSource = SocketSource(fileDescriptor: pipeFDs.read) { _, _ in }
        // Like every other kind (docs/design.md, "Errors": a dead loop):
        // nothing is added, nothing is thrown; one warning is logged.
        try loop.add(fdSource, forMode: .default)
        #expect(!loop.contains(fdSource, inMode: .default))
        #expect(fdSource.isValid)

        // What the dead loop refused can go to a live loop.
        let (timerAccepted, observerAccepted, socketAccepted) = try onNewThread {
            let live = RunLoop.current
            live.add(timer, forMode: .default)
            live.add(observer, forMode: .default)
            try live.add(fdSource, forMode: .default)
            return (
                live.contains(timer, inMode: .default), live.contains(observer, inMode: .default),
                live.contains(fdSource, inMode: .default))
        }
        #expect(timerAccepted && observerAccepted && socketAccepted)
        #expect(ran.value == 0)
    }

    @Test("S-THR-3: thread exit releases every fd of its loop (wake-up, timer, epoll sets), with sources and timers in several modes")
    func teardownReleasesFileDescriptors() async {
        // In a process of its own, where no other test opens fds. The
        // runtime (libdispatch) may still open or close an fd of its own now
        // and then, hence the small tolerance, the same wherever the count
        // is read: each loop holds at least 4 fds (80 for the 20 loops, each
        // counted against the count just before it), and the count after
        // each is compared with one baseline for 20 loops in a row, so a
        // leak of even one fd per loop shows.
        await #expect(processExitsWith: .success) {
            // What the loops use but do not own is made before the count,
            // and whatever the runtime opens lazily for a first thread too.
            try onNewThread { _ = RunLoop.current }
            let context = ZMQContext.shared
            let endpoint = uniqueEndpoint("fd-count")
            let receiver = try context.makeSocket(.pair)
            try receiver.bind(endpoint)
            let sender = try context.makeSocket(.pair)
            try sender.connect(endpoint)
            let pipeFDs = try makePipe()
            let baseline = openFileDescriptorCount()
            var loopsFDs = 0

            for round in 0..<20 {
                let socketSource = round == 0 ? SocketSource(socket: receiver) { _, socket in
                    _ = try? socket.receiveMultipart(dontWait: true)
                } : nil
                let fdSource = SocketSource(fileDescriptor: pipeFDs.read) { _, _ in }
                let beforeLoop = openFileDescriptorCount()
                loopsFDs += try onNewThread { () -> Int in
                    let loop = RunLoop.current
                    loop.add(unsignalledSource(), forMode: .default)
                    loop.add(distantTimer(), forMode: .common)
                    loop.add(unsignalledSource(), forMode: "other")
                    if let socketSource { try loop.add(socketSource, forMode: .common) }
                    try loop.add(fdSource, forMode: "other")
                    loop.addCommonMode("third")
                    loop.run(mode: .default, seconds: 0)
                    loop.run(mode: "other", seconds: 0)
                    loop.run(mode: "third", seconds: 0)
                    return openFileDescriptorCount() - beforeLoop
                }
                let drift = openFileDescriptorCount() - baseline
                guard abs(drift) <= 2 else { exit(3) }  // round 0: at least 4 left over if the loop leaked
            }
            // eventfd + timerfd + base epoll set + an epoll set per mode with a socket source.
            guard loopsFDs >= 20 * 4 - 2 else { exit(2) }
            receiver.close()
            sender.close()
            close(pipeFDs.read)
            close(pipeFDs.write)
        }
    }

    @Test("S-THR-3: the wake-up eventfd of a dead loop goes when the last reference to the loop does")
    func deadLoopFileDescriptorGoesWithLastReference() async {
        await #expect(processExitsWith: .success) {
            // Warm up: whatever the runtime opens lazily for a first thread is open before the count.
            try onNewThread { _ = RunLoop.current }
            let baseline = openFileDescriptorCount()
            // 20 dead loops, so that one fd each stands out from the runtime's
            // occasional fd (see teardownReleasesFileDescriptors).
            var loops: [RunLoop] = []
            for _ in 0..<20 {
                loops.append(try onNewThread { () -> RunLoop in
                    let loop = RunLoop.current
                    loop.add(unsignalledSource(), forMode: .default)
                    loop.add(distantTimer(), forMode: .default)
                    return loop
                })
            }
            for loop in loops { loop.wakeUp() }  // harmless, into each loop's own eventfd
            let held = openFileDescriptorCount() - baseline
            guard abs(held - 20) <= 2 else { exit(2) }  // only the eventfd of each
            loops.removeAll()
            let after = openFileDescriptorCount() - baseline
            guard abs(after) <= 2 else { exit(3) }
        }
    }

    // MARK: S-THR-4

    @Test("S-THR-4: running another thread's loop traps with a message naming the loop's thread")
    func runningAnotherThreadsLoopTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let alive = Locked<RunLoop?>(nil)
            let gate = DispatchSemaphore(value: 0)
            let owner = SpawnedThread(named: "live-owner") {
                let loop = RunLoop.current
                loop.add(unsignalledSource(), forMode: .default)
                alive.value = loop
                gate.wait()
            }
            _ = owner
            guard waitUntil({ alive.value != nil }), let live = alive.value else { exit(0) }
            // The exit test's own thread is not the owner.
            live.run(mode: .default, seconds: 0)  // must trap
            exit(0)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("belongs to thread 'live-owner'"), "stderr: \(stderr)")
        #expect(stderr.contains("Only a loop's own thread may run it"))
    }

    @Test("S-THR-4: every entry point that runs the loop checks the thread: runUntilStopped from another thread traps")
    func runUntilStoppedFromAnotherThreadTraps() async {
        await #expect(processExitsWith: .failure) {
            let alive = Locked<RunLoop?>(nil)
            let gate = DispatchSemaphore(value: 0)
            let owner = SpawnedThread {
                let loop = RunLoop.current
                loop.add(unsignalledSource(), forMode: .default)
                alive.value = loop
                gate.wait()
            }
            _ = owner
            guard waitUntil({ alive.value != nil }), let live = alive.value else { exit(0) }
            live.runUntilStopped()  // must trap
            exit(0)
        }
    }

    @Test("S-THR-4: adding, removing, signalling, performing and waking from many threads while the loop runs is safe")
    func publicOperationsFromManyThreads() throws {
        let worker = LoopThread(name: "thr4-worker")
        try worker.start()
        defer { worker.stop() }
        let loop = try #require(worker.runLoop)
        let performed = Counter()
        let blocksRun = Counter()
        let threads = (0..<4).map { index in
            SpawnedThread { () -> Int in
                var queued = 0
                for round in 0..<150 {
                    let source = CustomSource(order: round % 3) { performed.increment() }
                    let mode: RunLoop.Mode = round % 2 == 0 ? .default : .common
                    loop.add(source, forMode: mode)
                    source.signalAndWakeUp()
                    let timer = try RunLoopKitCore.Timer(timeInterval: 0.001, repeats: false) { _ in }
                    loop.add(timer, forMode: .default)
                    if loop.perform({ blocksRun.increment() }) { queued += 1 }
                    _ = loop.currentMode
                    _ = loop.isWaiting
                    _ = loop.commonModes
                    _ = loop.allModes
                    loop.addCommonMode(RunLoop.Mode("thr4-\(index)"))
                    loop.wakeUp()
                    timer.invalidate()
                    loop.remove(source, forMode: mode)
                }
                return queued
            }
        }
        let queued = try threads.map { try $0.join() }.reduce(0, +)
        // Everything queued before this runs has run once this returns (S-BLK-4).
        try worker.performAndWait(timeout: .seconds(30)) {}
        #expect(queued == 600)
        #expect(blocksRun.value == 600)
        #expect(performed.value <= 600)
        #expect(Set(loop.commonModes).isSuperset(of: ["thr4-0", "thr4-1", "thr4-2", "thr4-3", .default]))
    }

    // MARK: S-THR-5

    @Test("S-THR-5: a LoopThread carries its name at the OS level and in its loop")
    func loopThreadNameAtOSLevel() throws {
        let worker = LoopThread(name: "rlk-named")
        try worker.start()
        defer { worker.stop() }
        let tid = try #require(worker.threadID)
        #expect(osThreadName(tid: tid) == "rlk-named")
        #expect(worker.runLoop?.threadName == "rlk-named")
        let (insideName, insideTID) = try worker.performAndWait { (LoopThread.currentName, currentThreadID()) }
        #expect(insideName == "rlk-named")
        #expect(insideTID == tid)
    }

    @Test("S-THR-5: Linux keeps 15 bytes of a thread name; the loop keeps the whole name for diagnostics")
    func longLoopThreadNameIsCutAt15Bytes() throws {
        let longName = "runloopkit-worker-with-a-long-name"
        let worker = LoopThread(name: longName)
        try worker.start()
        defer { worker.stop() }
        let tid = try #require(worker.threadID)
        #expect(osThreadName(tid: tid) == "runloopkit-work")
        #expect(osThreadName(tid: tid)?.utf8.count == 15)
        #expect(worker.runLoop?.threadName == longName)
        #expect(try worker.performAndWait { LoopThread.currentName } == longName)
    }

    @Test("S-THR-5: a multi-byte name is cut at 15 bytes without splitting a character")
    func multiByteNameIsCutOnCharacterBoundary() throws {
        let name = "ééééééééé"  // 9 characters, 18 bytes
        let worker = LoopThread(name: name)
        try worker.start()
        defer { worker.stop() }
        let tid = try #require(worker.threadID)
        #expect(osThreadName(tid: tid) == "ééééééé")  // 7 characters, 14 bytes
    }

    @Test("S-THR-5: a plain thread's loop is named after the thread's OS name")
    func plainThreadLoopTakesOSName() throws {
        let name = try onNewThread(named: "plain-named") { RunLoop.current.threadName }
        #expect(name == "plain-named")
    }

    @Test("S-THR-5, S-MODE-4: the warning for running the common pseudo-mode names the loop thread")
    func commonModeWarningNamesThread() async {
        #if DEBUG
        let result = await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "mode4-diag")
            try worker.start()
            let result = try worker.performAndWait { RunLoop.current.run(mode: .common, seconds: 10) }
            worker.stop()
            guard result == .finished else { exit(2) }
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("mode4-diag"), "stderr: \(stderr)")
        #expect(stderr.contains("run(mode: .common) is invalid"), "stderr: \(stderr)")
        #endif
    }

    @Test("S-THR-5: diagnostics name the loop thread: a trap on a LoopThread's loop names it")
    func trapMessageNamesLoopThread() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let worker = LoopThread(name: "diag-named")
            try worker.start()
            guard let loop = worker.runLoop else { exit(0) }
            loop.run(mode: .default, seconds: 0)  // not its thread: must trap
            exit(0)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("'diag-named'"), "stderr: \(stderr)")
    }
}
