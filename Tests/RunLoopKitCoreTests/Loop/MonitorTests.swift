// Observability (issue item 5): a RunLoopMonitor set on `loop.monitor` gets a
// PassReport per pass and a CalloutReport per callout. The callouts are those
// of S-RUN-2 (observers S-OBS-2, timers S-TMR-2, blocks S-BLK-1). A block's
// report names it (CalloutReport.origin): the tag given to perform, and the
// file and line of the perform call; so does a delayed perform's (S-BLK-3).
import Dispatch
import Glibc
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Run loop monitor", .blocksThreads)
struct MonitorTests {
    final class Recorder: RunLoopMonitor, @unchecked Sendable {
        let callouts = Locked<[RunLoop.CalloutReport]>([])
        let passes = Locked<[RunLoop.PassReport]>([])
        func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) {
            callouts.withLock { $0.append(callout) }
        }
        func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) {
            passes.withLock { $0.append(pass) }
        }
    }

    @Test("Monitor, S-BLK-1: a slow block's CalloutReport has kind, mode, thread name and a duration covering it")
    func slowBlockIsReported() throws {
        let worker = LoopThread(name: "mon-worker")
        try worker.start()
        let loop = try #require(worker.runLoop)
        let recorder = Recorder()
        loop.monitor = recorder
        #expect(loop.monitor === recorder)
        // A barrier: every block queued after it runs with the monitor in place.
        try worker.performAndWait {}
        let after = monotonicNow()
        for _ in 0..<5 { try worker.perform {} }
        try worker.perform {
            // The input: a callout that blocks for 20 ms.
            _ = DispatchSemaphore(value: 0).wait(timeout: .now() + .milliseconds(20))
        }
        try worker.performAndWait {}
        worker.stop()  // joins: every report has been delivered

        let blocks = recorder.callouts.value.filter { $0.startNanoseconds >= after }
        #expect(blocks.count == 7, "one CalloutReport per block: \(blocks.map(\.kind))")
        #expect(blocks.allSatisfy { $0.kind == .block && $0.mode == .default && $0.threadName == "mon-worker" })
        // Reports come in callout order: the sixth is the slow block.
        try #require(blocks.count == 7)
        #expect(blocks.map(\.startNanoseconds) == blocks.map(\.startNanoseconds).sorted())
        let slow = blocks[5]
        #expect(slow.durationNanoseconds >= 20 * nanosecondsPerMillisecond, "the slow callout reported \(slow.duration)")
        #expect(slow.duration >= .milliseconds(20))
        // The pass that ran it is at least as long, and handled a source (S-BLK-5).
        let passes = recorder.passes.value
        #expect(passes.contains { $0.durationNanoseconds >= slow.durationNanoseconds && $0.handledSource })
        #expect(passes.allSatisfy { $0.mode == .default && $0.threadName == "mon-worker" })
    }

    @Test("Monitor: RunLoop.tracer hears of every loop's passes and callouts after the loop's own monitor, with the pass's and the sleep's start on CLOCK_MONOTONIC; removed, it hears of nothing more (in a child process: the tracer is the process's)")
    func tracerComposesWithMonitor() async {
        await #expect(processExitsWith: .success) {
            final class Ordered: RunLoopMonitor, @unchecked Sendable {
                let log: Locked<[String]>
                let name: String
                let passes = Locked<[RunLoop.PassReport]>([])
                init(_ name: String, _ log: Locked<[String]>) { self.name = name; self.log = log }
                func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) {
                    guard callout.threadName == "tracer-worker" else { return }
                    log.withLock { $0.append("\(name) \(callout.kind)") }
                }
                func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) {
                    guard pass.threadName == "tracer-worker" else { return }
                    log.withLock { $0.append("\(name) pass") }
                    passes.withLock { $0.append(pass) }
                }
            }
            let log = Locked<[String]>([])
            let monitor = Ordered("monitor", log), tracer = Ordered("tracer", log)
            let worker = LoopThread(name: "tracer-worker")
            try worker.start()
            let loop = try #require(worker.runLoop)
            loop.monitor = monitor
            RunLoop.tracer = tracer
            try worker.performAndWait {}
            // Cleared on the loop's thread, between two reports of a pair's.
            try worker.performAndWait { log.withLock { $0.removeAll() } }
            let before = monotonicNow()
            // A block, then a sleep until the timer fires.
            try worker.perform {}
            let fired = DispatchSemaphore(value: 0)
            try worker.performAndWait { loop.add(try! Timer(timeInterval: 0.02, repeats: false) { _ in fired.signal() }, forMode: .default) }
            #expect(fired.wait(timeout: .now() + 30) == .success)
            // Read on the loop's thread: every earlier callout's and pass's
            // reports have then reached both (read from here, a pair can be
            // caught half told).
            let seen = try worker.performAndWait { log.value }
            // Each report reaches the monitor, then the tracer.
            // (The block that cleared the log is reported after it: its pair leads.)
            #expect(seen.count >= 4 && seen.count % 2 == 0, "\(seen)")
            for index in stride(from: 0, to: seen.count - 1, by: 2) {
                #expect(seen[index].hasPrefix("monitor ") && seen[index + 1] == "tracer " + seen[index].dropFirst("monitor ".count), "\(seen)")
            }
            #expect(seen.contains("tracer block") && seen.contains("tracer timer"))
            // A pass that slept (an idle loop sleeps between two barriers;
            // under load the next may come first: then try again).
            #expect(waitUntil(timeout: 30) {
                _ = try? worker.performAndWait {}
                return tracer.passes.value.contains { $0.startNanoseconds >= before && $0.sleptNanoseconds > 0 }
            })
            let slept = tracer.passes.value.filter { $0.startNanoseconds >= before && $0.sleptNanoseconds > 0 }
            #expect(!slept.isEmpty && slept.allSatisfy {
                $0.sleepStartNanoseconds >= $0.startNanoseconds
                    && $0.sleepStartNanoseconds + $0.sleptNanoseconds <= $0.startNanoseconds + $0.durationNanoseconds
            })
            RunLoop.tracer = nil
            // The pass under way at the removal (asleep) still reports to the
            // tracer; the one after it reads the removal. Two passes on, both
            // have ended.
            let removedAt = loop.passesCompleted
            while loop.passesCompleted < removedAt + 2 { try worker.performAndWait {} }
            let count = log.value.count
            try worker.performAndWait {}
            try worker.performAndWait {}
            #expect(log.value.dropFirst(count).allSatisfy { $0.hasPrefix("monitor ") }, "the tracer was told after its removal")
            worker.stop()
        }
    }

    @Test("Monitor: one PassReport per pass, numbered without gaps up to passesCompleted")
    func onePassReportPerPass() throws {
        let worker = LoopThread(name: "mon-passes")
        try worker.start()
        let loop = try #require(worker.runLoop)
        let recorder = Recorder()
        loop.monitor = recorder
        for index in 0..<50 { #expect(try worker.performAndWait { index } == index) }
        worker.stop()

        let numbers = recorder.passes.value.map(\.passNumber)
        let first = try #require(numbers.first)
        #expect(numbers == Array(first...(first + UInt64(numbers.count) - 1)), "pass numbers skip or repeat")
        #expect(numbers.last == loop.passesCompleted, "the last pass was not reported")
    }

    @Test("Monitor, S-OBS-2, S-TMR-2: observer and timer callouts are reported with their kind and mode; sleep is measured")
    func observerAndTimerCallouts() throws {
        let recorder = Recorder()
        let mode = RunLoop.Mode("monitor.mode")
        let (result, timerDate) = try SpawnedThread<(RunLoop.RunResult, UInt64)>(named: "mon-timer") {
            let loop = RunLoop.current
            let timer = try Timer(timeInterval: 0.2, repeats: false) { _ in }
            let date = timer.nextFireInstant
            loop.add(timer, forMode: mode)
            loop.add(RunLoopObserver(activities: [.entry, .beforeWaiting, .exit]) { _, _ in }, forMode: mode)
            _ = loop.run(mode: mode, seconds: 0)  // consumes the wake-up of the add, before the monitor is set
            loop.monitor = recorder
            return (loop.run(mode: mode, seconds: 10), date)
        }.join()
        #expect(result == .finished)
        let callouts = recorder.callouts.value
        #expect(callouts.map(\.kind) == [.observer(.entry), .observer(.beforeWaiting), .timer, .observer(.exit)])
        #expect(callouts.allSatisfy { $0.mode == mode && $0.threadName == "mon-timer" })
        #expect(callouts.map(\.kind.description) == ["observer(entry)", "observer(beforeWaiting)", "timer", "observer(exit)"])
        let timerCallout = try #require(callouts.first { $0.kind == .timer })
        #expect(timerCallout.startNanoseconds >= timerDate, "the timer's callout started before its date")

        let passes = recorder.passes.value
        #expect(passes.count == 1)
        let pass = try #require(passes.first)
        #expect(pass.firedTimers == 1 && !pass.handledSource && pass.mode == mode)
        // It slept between the beforeWaiting callout and the timer's, for most
        // of the timer's 200 ms; the pass's duration includes the sleep.
        let beforeWaiting = try #require(callouts.first { $0.kind == .observer(.beforeWaiting) })
        let sleepWindow = timerCallout.startNanoseconds - (beforeWaiting.startNanoseconds + beforeWaiting.durationNanoseconds)
        #expect(pass.sleptNanoseconds <= sleepWindow)
        #expect(pass.sleptNanoseconds >= 10 * nanosecondsPerMillisecond)
        #expect(pass.durationNanoseconds >= pass.sleptNanoseconds)
    }

    @Test("Monitor: setting monitor to nil stops the reports")
    func clearingTheMonitor() throws {
        let worker = LoopThread(name: "mon-clear")
        try worker.start()
        defer { worker.stop() }
        let loop = try #require(worker.runLoop)
        let recorder = Recorder()
        loop.monitor = recorder
        try worker.performAndWait {}
        try worker.performAndWait {}
        #expect(!recorder.callouts.value.isEmpty)
        // Set from the loop's own thread, between two passes' worth of blocks.
        try worker.performAndWait { loop.monitor = nil }
        try worker.performAndWait {}
        let count = recorder.callouts.value.count
        for _ in 0..<10 { try worker.performAndWait {} }
        #expect(recorder.callouts.value.count == count, "reports kept coming after monitor = nil")
        #expect(loop.monitor == nil)
    }

    // MARK: - Which block (CalloutReport.origin)

    /// The origins of the block callouts that started at or after `after`, in callout order.
    private static func blockOrigins(_ recorder: Recorder, after: UInt64) -> [RunLoop.CalloutOrigin?] {
        recorder.callouts.value.filter { $0.kind == .block && $0.startNanoseconds >= after }.map(\.origin)
    }

    @Test("Monitor, S-BLK-1, S-BLK-2: a block queued with a tag is reported with that tag and its perform call's file and line, through every perform entry point")
    func taggedBlocksAreNamed() async throws {
        let worker = LoopThread(name: "mon-tags")
        try worker.start()
        let loop = try #require(worker.runLoop)
        let recorder = Recorder()
        loop.monitor = recorder
        try worker.performAndWait {}  // a barrier: what follows runs with the monitor in place
        let after = monotonicNow()
        var lines: [UInt] = []
        // One block through each entry point, each queued after the previous
        // one from this thread or waited for: they run in this order (S-BLK-4).
        loop.perform(tag: "RunLoop.perform") {}; lines.append(#line)
        loop.perform(inModes: [.default], tag: "RunLoop.perform(inModes:)") {}; lines.append(#line)
        try loop.performAndWait(tag: "RunLoop.performAndWait") {}; lines.append(#line)
        try worker.perform(tag: "LoopThread.perform") {}; lines.append(#line)
        try worker.performAndWait(tag: "LoopThread.performAndWait") {}; lines.append(#line)
        try worker.perform(waitUntilDone: false, tag: "waitUntilDone: false") {}; lines.append(#line)
        try worker.perform(waitUntilDone: true, tag: "waitUntilDone: true") {}; lines.append(#line)
        try await worker.performAndAwait(tag: "LoopThread.performAndAwait") {}; lines.append(#line)
        worker.stop()  // joins: every report has been delivered

        let origins = Self.blockOrigins(recorder, after: after)
        let tags = [
            "RunLoop.perform", "RunLoop.perform(inModes:)", "RunLoop.performAndWait", "LoopThread.perform",
            "LoopThread.performAndWait", "waitUntilDone: false", "waitUntilDone: true", "LoopThread.performAndAwait",
        ]
        #expect(origins.map { $0?.tag } == tags)
        // The caller's call site, not a line inside RunLoopKit (perform(waitUntilDone:) forwards it).
        #expect(origins.map { $0?.file } == Array(repeating: #fileID, count: tags.count))
        #expect(origins.map { $0?.line } == lines)
        #expect(origins.first??.description == "tag 'RunLoop.perform' (MonitorTests.swift:\(lines[0]))")
        #expect(origins.first??.location == "MonitorTests.swift:\(lines[0])")
    }

    @Test("Monitor, S-BLK-1, S-BLK-2: a block queued without a tag is reported with the file and line of its perform call")
    func untaggedBlocksNameTheirCallSite() async throws {
        let worker = LoopThread(name: "mon-lines")
        try worker.start()
        let loop = try #require(worker.runLoop)
        let recorder = Recorder()
        loop.monitor = recorder
        try worker.performAndWait {}
        let after = monotonicNow()
        var lines: [UInt] = []
        loop.perform {}; lines.append(#line)
        loop.perform(inModes: [.common]) {}; lines.append(#line)
        try loop.performAndWait {}; lines.append(#line)
        try worker.perform {}; lines.append(#line)
        try worker.performAndWait {}; lines.append(#line)
        try worker.perform(waitUntilDone: false) {}; lines.append(#line)
        try worker.perform(waitUntilDone: true) {}; lines.append(#line)
        try await worker.performAndAwait {}; lines.append(#line)
        worker.stop()

        let origins = Self.blockOrigins(recorder, after: after)
        #expect(origins.count == lines.count, "one report per block: \(origins)")
        #expect(origins.allSatisfy { $0 != nil && $0?.tag == nil }, "\(origins)")
        #expect(origins.map { $0?.file } == Array(repeating: #fileID, count: lines.count))
        #expect(origins.map { $0?.line } == lines)
        #expect(origins.map { $0?.description } == lines.map { "MonitorTests.swift:\($0)" })
    }

    @Test("Monitor, S-BLK-3, S-TMR-7: a delayed perform's timer callout carries its tag, file and line")
    func delayedPerformIsNamed() throws {
        let recorder = Recorder()
        let lines = try SpawnedThread<[UInt]>(named: "mon-delay") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            loop.monitor = recorder
            var lines: [UInt] = []
            try loop.perform(afterDelay: 5, tag: "autosave") {}; lines.append(#line)
            try loop.perform(afterDelay: 6, inModes: [.default]) {}; lines.append(#line)
            clock.advance(by: .seconds(6))
            loop.run(mode: .default, seconds: 0)  // both due: they fire in this pass, in fire-date order
            return lines
        }.join()

        let timers = recorder.callouts.value.filter { $0.kind == .timer }
        #expect(timers.map { $0.origin?.tag } == ["autosave", nil])
        #expect(timers.map { $0.origin?.file } == [#fileID, #fileID])
        #expect(timers.map { $0.origin?.line } == lines)
        #expect(timers.first?.origin?.description == "tag 'autosave' (MonitorTests.swift:\(lines[0]))")
    }

    @Test("Monitor, S-OBS-2, S-TMR-2, S-SRC0-1, S-SRC1-1: observer, timer, custom source and socket source callouts have no origin")
    func otherCalloutsHaveNoOrigin() throws {
        let recorder = Recorder()
        let pipeFDs = try makePipe()
        defer { close(pipeFDs.read); close(pipeFDs.write) }
        let socketEvents = Counter()
        let socket = SocketSource(fileDescriptor: pipeFDs.read) { _, fd in
            var byte: UInt8 = 0
            if read(fd, &byte, 1) == 1 { socketEvents.increment() }
        }
        let blockLine = try SpawnedThread<UInt>(named: "mon-others") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            loop.monitor = recorder
            loop.add(RunLoopObserver(activities: [.entry, .beforeTimers, .exit]) { _, _ in }, forMode: .default)
            try loop.scheduledTimer(withTimeInterval: 1, repeats: false) { _ in }
            let source = CustomSource {}
            loop.add(source, forMode: .default)
            try loop.add(socket, forMode: .default)
            source.signal()
            #expect(write(pipeFDs.write, "x", 1) == 1)
            loop.perform {}; let blockLine: UInt = #line
            clock.advance(by: .seconds(1))
            // Polls until the byte written before the run was handled (the
            // first pass normally; the bound only turns a bug into a failure).
            for _ in 0..<1_000 where socketEvents.value == 0 { loop.run(mode: .default, seconds: 0) }
            socket.invalidate()
            source.invalidate()
            return blockLine
        }.join()

        let callouts = recorder.callouts.value
        let kinds = Set(callouts.map(\.kind))
        // Each kind of callout took place, so that the next expectation covers it.
        #expect(kinds.isSuperset(of: [.observer(.entry), .timer, .customSource, .socketSource, .block]), "\(kinds)")
        let others = callouts.filter { $0.kind != .block }
        #expect(others.allSatisfy { $0.origin == nil }, "\(others.filter { $0.origin != nil }.map { "\($0.kind): \($0.origin!)" })")
        // The block beside them is named.
        #expect(callouts.filter { $0.kind == .block }.map { $0.origin?.line } == [blockLine])
    }
}
