// Observers: S-OBS-1 to S-OBS-3. Each loop runs on a thread made for the test.
import CLinuxSupport
import Dispatch
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import RunLoopKitTesting
import Testing

@Suite("Observers (S-OBS)", .blocksThreads)
struct ObserverTests {
    typealias Activity = RunLoop.Activity

    /// One call: which observer (by tag), which activity, on which kernel thread.
    struct Call: Equatable {
        let tag: String
        let activity: Activity
        let tid: Int32
    }

    /// Adds a timer that fires once after `delay`: the only item of the mode,
    /// so that the run sleeps once, fires it and returns `.finished`. A poll
    /// run first consumes the wake-up that adding the timer caused, so the
    /// run under test sleeps exactly once.
    private static func prepareOneSleepRun(_ loop: RunLoop, delay: Double = 0.05, mode: RunLoop.Mode = .default) throws {
        loop.add(try Timer(timeInterval: delay, repeats: false) { _ in }, forMode: mode)
        _ = loop.run(mode: mode, seconds: 0)
    }

    @Test("S-OBS-1, S-OBS-2: observers are told each activity of a run in `order`, on the loop's thread")
    func orderAndSequence() throws {
        let calls = Locked<[Call]>([])
        let loopTID = try SpawnedThread<Int32>(named: "obs-order") {
            let loop = RunLoop.current
            try Self.prepareOneSleepRun(loop)
            // Added out of order: 3, 1, 2 (and a second 1, which comes after the first 1).
            for (tag, order) in [("o3", 3), ("o1", 1), ("o2", 2), ("o1b", 1)] {
                loop.add(RunLoopObserver(activities: .allActivities, order: order) { _, activity in
                    calls.withLock { $0.append(Call(tag: tag, activity: activity, tid: rlk_gettid())) }
                }, forMode: .default)
            }
            #expect(loop.run(mode: .default, seconds: 10) == .finished)
            return rlk_gettid()
        }.join()

        let recorded = calls.value
        #expect(recorded.allSatisfy { $0.tid == loopTID }, "an observer was called off the loop's thread")
        let expectedActivities: [Activity] = [.entry, .beforeTimers, .beforeSources, .beforeWaiting, .afterWaiting, .exit]
        let expected = expectedActivities.flatMap { activity in
            ["o1", "o1b", "o2", "o3"].map { "\($0):\(activity)" }
        }
        #expect(recorded.map { "\($0.tag):\($0.activity)" } == expected)
    }

    @Test("S-OBS-1: an observer is told only the activities in its mask")
    func activityMask() throws {
        let calls = Locked<[Call]>([])
        try SpawnedThread<Void>(named: "obs-mask") {
            let loop = RunLoop.current
            try Self.prepareOneSleepRun(loop)
            let masks: [(String, Activity)] = [
                ("entryExit", [.entry, .exit]), ("waiting", [.beforeWaiting, .afterWaiting]),
                ("sources", .beforeSources),
            ]
            for (tag, mask) in masks {
                loop.add(RunLoopObserver(activities: mask) { _, activity in
                    calls.withLock { $0.append(Call(tag: tag, activity: activity, tid: 0)) }
                }, forMode: .default)
            }
            #expect(loop.run(mode: .default, seconds: 10) == .finished)
        }.join()
        let recorded = calls.value
        func activities(_ tag: String) -> [Activity] { recorded.filter { $0.tag == tag }.map(\.activity) }
        #expect(activities("entryExit") == [.entry, .exit])
        #expect(activities("waiting") == [.beforeWaiting, .afterWaiting])
        #expect(activities("sources") == [.beforeSources])
    }

    @Test("S-OBS-2: a non-repeating observer is invalidated after its first call")
    func nonRepeatingObserver() throws {
        let calls = Locked<[Activity]>([])
        let (valid, contained) = try SpawnedThread<(Bool, Bool)>(named: "obs-once") {
            let loop = RunLoop.current
            try Self.prepareOneSleepRun(loop)
            let observer = RunLoopObserver(activities: .allActivities, repeats: false) { _, activity in
                calls.withLock { $0.append(activity) }
            }
            #expect(!observer.repeats)
            loop.add(observer, forMode: .default)
            #expect(loop.run(mode: .default, seconds: 10) == .finished)
            // A second run: it must not be called again.
            try Self.prepareOneSleepRun(loop)
            #expect(loop.run(mode: .default, seconds: 10) == .finished)
            return (observer.isValid, loop.contains(observer, inMode: .default))
        }.join()
        #expect(calls.value == [.entry])
        #expect(!valid)
        #expect(!contained)
    }

    @Test("S-OBS-2: only the observers of the mode being run are told; .common ones in every common mode")
    func onlyRunningModeObservers() throws {
        let calls = Locked<[String]>([])
        try SpawnedThread<Void>(named: "obs-mode") {
            let loop = RunLoop.current
            let other = RunLoop.Mode("S-OBS-2.other")
            try Self.prepareOneSleepRun(loop, mode: .default)
            try Self.prepareOneSleepRun(loop, mode: other)
            for (tag, mode) in [("default", RunLoop.Mode.default), ("other", other), ("common", .common)] {
                loop.add(RunLoopObserver(activities: .entry) { _, _ in calls.withLock { $0.append(tag) } }, forMode: mode)
            }
            #expect(loop.run(mode: .default, seconds: 10) == .finished)
            #expect(calls.value == ["default", "common"])
            #expect(loop.run(mode: other, seconds: 10) == .finished)
            #expect(calls.value == ["default", "common", "other"])
        }.join()
    }

    @Test("S-OBS-3: an observer that removes itself and another and adds a new one neither crashes nor skips")
    func observerMutatesDuringCallout() throws {
        let calls = Locked<[String]>([])
        try SpawnedThread<Void>(named: "obs-mutate") {
            let loop = RunLoop.current
            try Self.prepareOneSleepRun(loop)
            func recorder(_ tag: String) -> @Sendable (RunLoopObserver, Activity) -> Void {
                { _, activity in calls.withLock { $0.append("\(tag):\(activity)") } }
            }
            let removedOther = RunLoopObserver(activities: .allActivities, order: 2, handler: recorder("B"))
            let survivor = RunLoopObserver(activities: .allActivities, order: 3, handler: recorder("C"))
            let added = RunLoopObserver(activities: .allActivities, order: 4, handler: recorder("D"))
            let mutator = RunLoopObserver(activities: .allActivities, order: 1) { observer, activity in
                calls.withLock { $0.append("A:\(activity)") }
                // Runs once: it removes itself, invalidates B, and adds D.
                loop.remove(observer, forMode: .default)
                removedOther.invalidate()
                loop.add(added, forMode: .default)
            }
            for observer in [mutator, removedOther, survivor] { loop.add(observer, forMode: .default) }
            #expect(loop.run(mode: .default, seconds: 10) == .finished)
            #expect(!loop.contains(mutator, inMode: .default))
            #expect(loop.contains(added, inMode: .default))
        }.join()

        let recorded = calls.value
        let all = ["entry", "beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting", "exit"]
        #expect(recorded.filter { $0.hasPrefix("A:") } == ["A:entry"])
        #expect(recorded.filter { $0.hasPrefix("B:") } == [], "an observer invalidated before its turn was called")
        #expect(recorded.filter { $0.hasPrefix("C:") } == all.map { "C:\($0)" }, "the survivor was skipped")
        // D joined during `entry`: it is told everything from the next activity on.
        #expect(recorded.filter { $0.hasPrefix("D:") } == all.dropFirst().map { "D:\($0)" })
    }
}
