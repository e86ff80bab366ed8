import Dispatch
import Glibc
import RunLoopKit

/// Which run loop drains the main queue on the main thread.
enum MainQueueDrainer: Sendable {
    /// RunLoopKit's `RunLoop.main` (S-EXEC-3).
    case runLoopKit
    /// Foundation's `RunLoop.main` (CFRunLoop's drain): FoundationMainQueuePeer.swift.
    case foundation
}

/// The main queue's drain, per block: a LoopThread on the far CPU queues
/// `count` empty blocks on DispatchQueue.main as fast as libdispatch takes
/// them, while the main thread runs its run loop's default mode (RunLoopKit's
/// or Foundation's) until the last one ran. Both sides queue through the
/// same libdispatch and drain through its same function: the difference is
/// what each run loop costs around a drain.
///
/// Runs only on the main thread of a program with a synchronous main, as
/// rlk-bench is (main.swift).
final class MainQueueDrainFlood: Contender {
    let label: String
    private let drainer: MainQueueDrainer
    private let count: Int
    private let timeout: Double
    private let placement: Placement
    private var producer: LoopThread?

    init(_ drainer: MainQueueDrainer, count: Int, timeout: Double, placement: Placement) {
        self.drainer = drainer
        label = drainer == .runLoopKit ? "RunLoopKit RunLoop.main" : "Foundation RunLoop.main"
        self.count = count
        self.timeout = timeout
        self.placement = placement
    }

    func setUp() throws {
        producer = try Placement.startedLoopThread("bench-mainq-src", on: placement.second)
    }

    func measure() throws -> [Double] {
        try Placement.whilePinned(to: placement.first) { try measurePinned() }
    }

    private func measurePinned() throws -> [Double] {
        guard let producer else { throw BenchError("not set up") }
        // Written by the last block, on this (the main) thread.
        let last = SampleRecorder(capacity: 1)
        let count = self.count
        let start = monotonicNanoseconds()
        try producer.perform { [last] in
            for _ in 0..<(count - 1) { DispatchQueue.main.async {} }
            DispatchQueue.main.async { last.mark = monotonicNanoseconds() }
        }
        let deadline = Date(timeIntervalSinceNow: timeout)
        while last.mark == 0 {
            guard Date() < deadline else { throw BenchError("timed out after \(timeout) s waiting for \(count) main-queue blocks") }
            switch drainer {
            case .runLoopKit: RunLoop.main.run(mode: .default, before: deadline)
            case .foundation: runFoundationMainLoop(before: deadline)
            }
        }
        return [Double(count) / (Double(last.mark - start) / 1e9)]
    }

    func tearDown() {
        producer?.stop()
        producer = nil
    }
}
