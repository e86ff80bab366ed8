// A timer's fireDate: S-TMR-6, as CFRunLoop keeps it (the date being fired
// during the callout, the next one after it), on a TestClock (S-TMR-7).
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Timer fire dates (S-TMR-6)", .blocksThreads)
struct TimerFireDateTests {
    @Test("S-TMR-6: a timer made with a fire date reports exactly that date")
    func exactFireDate() throws {
        let now = Date()
        for date in [now + 0.123_456_789, now - 3_600.000_001, now + 86_400 * 365, Date(timeIntervalSinceReferenceDate: 0)] {
            let timer = try Timer(fire: date, interval: 0, repeats: false) { _ in }
            #expect(timer.fireDate == date)
            let moved = date + 1.000_000_1
            timer.fireDate = moved
            #expect(timer.fireDate == moved)
        }
    }

    @Test("S-TMR-6: inside its callout a timer's fireDate is the date being fired; the next date is set after the callout")
    func fireDateDuringCallout() throws {
        let seenOneShot = Locked<Date?>(nil), seenRepeating = Locked<[Date]>([])
        let (oneShotDate, repeatStart, afterFirst, afterSecond, oneShotValid) =
            try SpawnedThread<(Date, Date, Date, Date, Bool)>(named: "tmr-date") {
                let clock = TestClock()
                let loop = RunLoop.current
                loop.use(clock)
                let oneShotDate = clock.now + 1
                let oneShot = try Timer(fire: oneShotDate, interval: 0, repeats: false) { timer in
                    seenOneShot.value = timer.fireDate
                }
                let repeatStart = clock.now + 2
                let repeating = try Timer(fire: repeatStart, interval: 0.25, repeats: true) { timer in
                    seenRepeating.withLock { $0.append(timer.fireDate) }
                }
                loop.add(oneShot, forMode: .default)
                loop.add(repeating, forMode: .default)
                clock.advance(by: .seconds(2))
                loop.run(mode: .default, seconds: 0)
                let afterFirst = repeating.fireDate
                clock.advance(by: .milliseconds(250))
                loop.run(mode: .default, seconds: 0)
                return (oneShotDate, repeatStart, afterFirst, repeating.fireDate, oneShot.isValid)
            }.join()
        // CFRunLoop keeps the date being fired until the callout returns:
        // not distantFuture for a one-shot timer, not already the next date.
        #expect(seenOneShot.value == oneShotDate)
        #expect(!oneShotValid, "a one-shot timer invalidates itself after firing (S-TMR-4)")
        #expect(seenRepeating.value == [repeatStart, repeatStart + 0.25])
        #expect(afterFirst == repeatStart + 0.25)
        #expect(afterSecond == repeatStart + 0.5)
    }

    @Test("S-TMR-6, S-RUN-8: a nested run inside a timer's callout does not fire that timer again")
    func nestedRunDoesNotRefire() throws {
        let calls = Counter()
        let nested = try SpawnedThread<RunLoop.RunResult>(named: "tmr-nest") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            let inner = Locked<RunLoop.RunResult?>(nil)
            let timer = try Timer(fire: clock.now + 1, interval: 1, repeats: true) { timer in
                guard calls.increment() == 1 else { return }
                // Still due by its date: the nested run must not fire it.
                inner.value = RunLoop.current.run(mode: .default, seconds: 0)
            }
            loop.add(timer, forMode: .default)
            clock.advance(by: .seconds(1))
            loop.run(mode: .default, seconds: 0)
            timer.invalidate()
            return inner.value ?? .finished
        }.join()
        #expect(calls.value == 1)
        #expect(nested == .timedOut)
    }
}
