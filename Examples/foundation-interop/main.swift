// foundation-interop: proves the two recipes of README.md, "Using RunLoopKit
// beside Foundation", for files that import both modules. Without either,
// such a file fails to compile: "'RunLoop' is ambiguous for type lookup in
// this context".
//
//   recipe 1, module selectors:       ModuleSelectors.swift
//   recipe 2, one typealias file:     RunLoopKitNames.swift, used here
//
// It then shows, with both modules side by side, why RunLoopKit exists: a
// block performed onto a sleeping Foundation RunLoop from another thread
// waits for the run's timeout; on a RunLoopKit loop it runs at once.
//
//   swift run foundation-interop
import Foundation
import RunLoopKit
import Synchronization

print("== recipe 1: module selectors (RunLoopKit::RunLoop, RunLoopKit::Timer)")
#if compiler(>=6.3)
try moduleSelectorsDemo()
#else
print("  skipped: module selectors need Swift 6.3 or later; recipe 2 works with any Swift 6")
#endif

print("\n== recipe 2: typealiases in RunLoopKitNames.swift; this file imports Foundation and RunLoopKit")
print("  RunLoop is \(String(reflecting: RunLoop.self)), Timer is \(String(reflecting: Timer.self)), RunLoop.Mode is \(String(reflecting: RunLoop.Mode.self))")
print("  Foundation's stay reachable: \(String(reflecting: Foundation.RunLoop.self)), \(String(reflecting: Foundation.Timer.self))")
let fired = Atomic<Bool>(false)
let timer = try Timer(timeInterval: 0.02, repeats: false) { _ in fired.store(true, ordering: .relaxed) }
RunLoop.current.add(timer, forMode: .default)
let result = RunLoop.current.run(mode: .default, seconds: 1)
let url = URL(string: "https://github.com/apple/swift-corelibs-foundation")!
print("  RunLoop.current.run(...) -> .\(result), timer fired: \(fired.load(ordering: .relaxed)); Foundation's URL beside it: host \(url.host ?? "?")")

// MARK: - Why: perform onto a sleeping loop from another thread

/// When a block was posted and when it ran, shared between threads.
final class Latency: Sendable {
    private let times = Mutex<(posted: Date?, ran: Date?)>((nil, nil))
    func posted() { times.withLock { $0.posted = Date() } }
    func ran() { times.withLock { $0.ran = Date() } }
    var elapsed: String {
        times.withLock { times in
            guard let posted = times.posted, let ran = times.ran else { return "never" }
            let seconds = ran.timeIntervalSince(posted)
            return seconds < 0.001 ? "\(Int((seconds * 1e6).rounded())) µs" : "\(Int((seconds * 1e3).rounded())) ms"
        }
    }
}

print("\n== why: RunLoop.perform from another thread onto a sleeping loop")

// Foundation: a thread runs its loop for up to 0.5 s; 0.1 s in, the main
// thread performs a block on it.
let foundationLatency = Latency()
let foundationLoop = Mutex<Foundation.RunLoop?>(nil)
let foundationDone = DispatchSemaphore(value: 0)
let foundationThread = Thread {
    let keepAlive = Foundation.Timer.scheduledTimer(withTimeInterval: 100, repeats: false) { _ in }
    foundationLoop.withLock { $0 = Foundation.RunLoop.current }
    _ = Foundation.RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: 0.5))
    keepAlive.invalidate()
    foundationDone.signal()
}
foundationThread.start()
Thread.sleep(forTimeInterval: 0.1)
foundationLatency.posted()
foundationLoop.withLock { $0 }!.perform { foundationLatency.ran() }
foundationDone.wait()
print("  Foundation.RunLoop: the block ran after \(foundationLatency.elapsed) (when the run timed out)")

// RunLoopKit: the same with a LoopThread's loop, asleep with no deadline.
let worker = LoopThread(name: "worker")
try worker.start()
Thread.sleep(forTimeInterval: 0.1)
let kitLatency = Latency()
kitLatency.posted()
worker.runLoop!.perform { kitLatency.ran() }
try worker.performAndWait {}  // runs after the block above
worker.stop()
print("  RunLoopKit.RunLoop: the block ran after \(kitLatency.elapsed) (perform wakes the loop)")
