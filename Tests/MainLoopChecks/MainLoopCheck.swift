import Dispatch
import Glibc
import RunLoopKit
import Synchronization

/// One check of the main loop, run on the main thread: nil if it held, else why not.
struct MainLoopCheck: Sendable {
    let name: String
    let body: @Sendable () -> String?

    static let all: [MainLoopCheck] = [
        blockFromAnotherThread, mainActorTask, drainIsAHandledSource, emptyCommonModeWaits,
        modeOutsideCommonModesDoesNotDrain, addedCommonModeDrains, nestedRunInBlockDoesNotDrain,
        nestedRunInMainActorJobDoesNotDrain, timersPortsAndMainQueueInterleave, monitorSeesDrains, runDoesNotFinish,
    ]

    private static let failures = Atomic<Int>(0)

    /// Runs `check` and prints its line; flushed at once, so that a test
    /// reads every line up to a crash.
    static func report(_ check: MainLoopCheck) {
        let outcome = check.body()
        if outcome != nil { failures.add(1, ordering: .relaxed) }
        print(outcome.map { "FAIL \(check.name): \($0)" } ?? "PASS \(check.name)")
        fflush(nil)  // every stream: stdout is not concurrency-safe to name
    }

    /// Prints the summary and exits: 0 if every check passed.
    static func finish() -> Never {
        print("DONE")
        fflush(nil)  // every stream: stdout is not concurrency-safe to name
        exit(failures.load(ordering: .relaxed) == 0 ? 0 : 1)
    }

    // MARK: - Helpers

    static var onMainLoop: Bool { RunLoop.current === RunLoop.main }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// Runs the main loop's default mode until `done` or 10 s, looking at
    /// `done` at least every 50 ms (a timer's fire does not end a run).
    static func runMain(until done: () -> Bool) {
        let deadline = Date(timeIntervalSinceNow: 10)
        while !done() && Date() < deadline {
            RunLoop.main.run(mode: .default, before: min(deadline, Date(timeIntervalSinceNow: 0.05)))
        }
    }
}

/// A value set on one thread and read on another.
final class Box<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    var current: Value { value.withLock { $0 } }
    func set(_ newValue: Value) { value.withLock { $0 = newValue } }
    func update(_ body: (inout Value) -> Void) { value.withLock { body(&$0) } }
}
