// Timers at scale: 10,000 timers in several modes, moved and invalidated
// before and during the run, on a TestClock (S-TMR-7); and 2,000 timers
// added to a running loop from one thread while a second moves them and a
// third invalidates them. Every loop here runs on a thread made for the test.
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Timers at scale (S-TMR-1, S-TMR-2, S-TMR-4, S-TMR-5)", .blocksThreads)
struct TimerAtScaleTests {
    private static let ms = nanosecondsPerMillisecond

    @Test("S-TMR-2, S-TMR-5, S-TMR-7 at scale: 10,000 timers in the default mode, another mode and the common modes, some moved and some invalidated before the run and more from callouts while it runs: each fires once, only while its loop runs one of its modes, never early, within one clock step when the loop runs its mode, in fire-date order")
    func timersAtScaleInSeveralModes() throws {
        // Dates and fire times are the clock's instants (ns): a Date, a
        // Double of seconds since 2001, rounds them to about 0.1 µs.
        struct Fire { let index: Int; let date: UInt64; let now: UInt64; let mode: RunLoop.Mode?; let inOtherRun: Bool }
        final class Record: @unchecked Sendable {
            // @unchecked Sendable: touched on the test's loop thread only.
            var fires: [Fire] = []
            var invalidated: Set<Int> = []
            var timers: [RunLoopKitCore.Timer] = []
            var inOtherRun = false
            var generator = SystemRandomNumberGenerator()
        }
        let count = 10_000
        let other = RunLoop.Mode("S-TMR-2.scale")
        let modes: [RunLoop.Mode] = [.default, other, .common]
        let record = try SpawnedThread<Record>(named: "tmr-scale") {
            let clock = TestClock()
            let loop = RunLoop.current
            loop.use(clock)
            let start = clock.now
            let record = Record()
            // A random timer other than the one firing, if still valid,
            // moved to `now` or later (S-TMR-5), or invalidated (S-TMR-4).
            @Sendable func changeOne(move: Bool, firing: Int? = nil) {
                let index = Int.random(in: 0..<count, using: &record.generator)
                let timer = record.timers[index]
                guard timer.isValid, index != firing else { return }
                if move {
                    // At least a step ahead: a Date rounds the clock's
                    // instant to about 0.1 µs, and a date that lands on the
                    // very instant being fired is taken at the next step.
                    timer.fireDate = clock.now + Double.random(in: 0.001..<0.2, using: &record.generator)
                } else {
                    timer.invalidate()
                    record.invalidated.insert(index)
                }
            }
            // Every date at least a step after the start: a date that
            // rounds to the start instant itself is due before the first
            // pass, which tells beforeWaiting (advancing the clock a step)
            // before step 9 fires it, as CFRunLoop's order has it. It would
            // fire one step late by this test's measure (seen once in about
            // 200 runs: a date 0.5 µs after the start).
            record.timers = try (0..<count).map { index in
                try RunLoopKitCore.Timer(fire: start + Double.random(in: 0.001..<1, using: &record.generator), interval: 0, repeats: false) { timer in
                    record.fires.append(Fire(index: index, date: timer.nextFireInstant, now: clock.manual.nowInstant,
                                             mode: loop.currentMode, inOtherRun: record.inOtherRun))
                    if record.fires.count % 7 == 0 { changeOne(move: true, firing: index) }
                    if record.fires.count % 11 == 0 { changeOne(move: false, firing: index) }
                }
            }
            for (index, timer) in record.timers.enumerated() { loop.add(timer, forMode: modes[index % 3]) }
            // Before the run: 1,500 moves (earlier or later), 1,000 invalidations.
            for _ in 0..<1500 {
                record.timers[Int.random(in: 0..<count, using: &record.generator)].fireDate = start + Double.random(in: 0.001..<1, using: &record.generator)
            }
            for _ in 0..<1000 { changeOne(move: false) }
            // The default mode until its timers are gone (1.5 s of the
            // clock at most), a millisecond at a time while idle; then the
            // other mode.
            let defaultStep = clock.advanceWhenIdle(loop, by: .milliseconds(1), mode: .default)
            _ = loop.run(mode: .default, seconds: 1.5)
            defaultStep.invalidate()
            record.inOtherRun = true
            clock.advanceWhenIdle(loop, by: .milliseconds(1), mode: other)
            _ = loop.run(mode: other, seconds: 0.5)
            // Each timer's block holds the record, which holds the timers.
            record.timers.removeAll()
            return record
        }.join()

        let fired = record.fires.map(\.index)
        #expect(Set(fired).count == fired.count, "a timer fired twice")
        #expect(Set(fired) == Set(0..<count).subtracting(record.invalidated), "fired: \(fired.count), invalidated: \(record.invalidated.count) of \(count)")
        #expect(record.invalidated.count >= 900)
        #expect(record.fires.allSatisfy { $0.now >= $0.date }, "a timer fired early")
        let inDefault = record.fires.filter { !$0.inOtherRun }
        let inOther = record.fires.filter(\.inOtherRun)
        // S-TMR-2: only in their modes. The default run lasts until no
        // default or common-modes timer is left.
        #expect(inDefault.allSatisfy { $0.mode == .default && $0.index % 3 != 1 })
        #expect(inOther.allSatisfy { $0.mode == other && $0.index % 3 == 1 })
        #expect(inOther.count > 2000)
        // While the loop runs its mode, a timer fires within one step of its date.
        let late = inDefault.filter { !($0.now >= $0.date && $0.now - $0.date < Self.ms) }
        #expect(late.isEmpty, "late by more than a clock step: \(late.prefix(3).map { "timer \($0.index) (mode \($0.index % 3)) due \($0.date) fired \($0.now)" })")
        // In fire-date order, in each run.
        for run in [inDefault, inOther] {
            #expect(zip(run, run.dropFirst()).allSatisfy { $0.date <= $1.date }, "out of fire-date order")
        }
    }

    @Test("S-TMR-1, S-TMR-4, S-TMR-5: timers added to a running loop from one thread while a second moves their fire dates and a third invalidates them: each ends invalid, in no mode and bound to no loop")
    func addMoveAndInvalidateRace() throws {
        let thread = LoopThread(name: "tmr-race")
        try thread.start()
        defer { thread.stop() }
        let loop = try #require(thread.runLoop)
        let timers = try (0..<2_000).map { index in
            // Due within 50 ms, so that some fire while the others race.
            try Timer(fire: Date() + 0.001 * Double(index % 50), interval: 0.001, repeats: true) { _ in }
        }
        let modes: [RunLoop.Mode] = [.default, .common, RunLoop.Mode("tmr-race-other")]
        let done = DispatchGroup()
        DispatchQueue.global().async(group: done) {
            for (index, timer) in timers.enumerated() { loop.add(timer, forMode: modes[index % modes.count]) }
        }
        DispatchQueue.global().async(group: done) {
            for (index, timer) in timers.enumerated() { timer.fireDate = Date() + (index % 2 == 0 ? -0.001 : 0.002) }
        }
        DispatchQueue.global().async(group: done) {
            for timer in timers { timer.invalidate() }
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        // Whatever the order, every timer ends where its invalidation leaves it.
        let held = try thread.performAndWait(timeout: .seconds(30)) {
            timers.filter { timer in modes.contains { loop.holds(timer, inMode: $0) } }.count
        }
        #expect(held == 0, "an invalidated timer stayed in a mode")
        #expect(timers.allSatisfy { !$0.isValid && $0.loop == nil })
    }
}
