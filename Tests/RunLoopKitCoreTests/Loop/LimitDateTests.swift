// limitDate(forMode:), as NSRunLoop's limitDateForMode: (S-RUN-10).
import Dispatch
import Glibc
import Testing
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting

@Suite("limitDate(forMode:) (S-RUN-10)", .blocksThreads)
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
