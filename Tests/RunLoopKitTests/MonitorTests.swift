// Observability (issue item 5): a RunLoopMonitor set on `loop.monitor` gets a
// PassReport per pass and a CalloutReport per callout. The callouts are those
// of S-RUN-2 (observers S-OBS-2, timers S-TMR-2, blocks S-BLK-1).
import Dispatch
@testable import RunLoopKit
import Testing

@Suite("Run loop monitor")
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
}
