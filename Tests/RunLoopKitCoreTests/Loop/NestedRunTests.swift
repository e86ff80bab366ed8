// Running the loop: runs nest, each with its own result; stop ends only the
// innermost (S-RUN-8).
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("Running the loop: nested runs (S-RUN-8)", .blocksThreads)
struct NestedRunTests {
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
}
