// Running the loop: an empty mode returns at once (S-RUN-1).
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("Running the loop: an empty mode (S-RUN-1)", .blocksThreads)
struct RunEmptyModeTests {
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
}
