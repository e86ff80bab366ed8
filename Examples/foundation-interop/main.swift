// foundation-interop: proves the two recipes of README.md, "Beside Foundation", for files that import both modules. Without either,
// such a file fails to compile: "'RunLoop' is ambiguous for type lookup in
// this context", and likewise for Timer, Port, PortMessage and
// URLResourceKey (RunLoopKitNames.swift says why these five). Each recipe
// uses all five: a timer fires, a port receives a message sent to itself,
// a file's resource values are read. Each check prints what it proved, and
// the exit status is 1 if one failed.
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

print("== recipe 1: module selectors (RunLoopKit::RunLoop, RunLoopKit::Port, Foundation::URLResourceKey...)")
#if compiler(>=6.3)
try moduleSelectorsDemo()
#else
print("  skipped: module selectors need Swift 6.3 or later; recipe 2 works with any Swift 6")
#endif

print("\n== recipe 2: typealiases in RunLoopKitNames.swift; this file imports Foundation and RunLoopKit")
// Every clashing name, unqualified, and the type each one means here.
let resolved = [
    String(reflecting: RunLoop.self), String(reflecting: Timer.self), String(reflecting: Port.self),
    String(reflecting: PortMessage.self), String(reflecting: URLResourceKey.self),
]
// RunLoopKit's types live in the modules the umbrella re-exports.
check(resolved == ["RunLoopKitCore.RunLoop", "RunLoopKitCore.Timer", "RunLoopKitPorts.Port", "RunLoopKitPorts.PortMessage", "Foundation.URLResourceKey"],
      "unqualified, the clashing names mean \(resolved.joined(separator: ", "))")
let foundations = [
    String(reflecting: Foundation.RunLoop.self), String(reflecting: Foundation.Timer.self),
    String(reflecting: Foundation.Port.self), String(reflecting: Foundation.PortMessage.self),
]
check(foundations == ["Foundation.RunLoop", "Foundation.Timer", "Foundation.Port", "Foundation.PortMessage"],
      "Foundation's stay reachable qualified: \(foundations.joined(separator: ", "))")

let fired = Atomic<Bool>(false)
let timer = try Timer(timeInterval: 0.02, repeats: false) { _ in fired.store(true, ordering: .relaxed) }
// Outside the common modes, which on the main thread never run dry (they
// serve DispatchQueue.main): the run finishes once the timer fired.
let timerMode = RunLoop.Mode("interop-timer")
RunLoop.current.add(timer, forMode: timerMode)
let result: RunLoop.RunResult = RunLoop.current.run(mode: timerMode, seconds: 1)
check(fired.load(ordering: .relaxed), "a Timer on RunLoop.current fired; run returned .\(result)")

let port: Port = try Port(transport: .inproc)
let inbox = Inbox<PortMessage>()
port.setMessageHandler { (message: PortMessage) in inbox.store(message) }
try port.schedule(in: RunLoop.current, forMode: .default)
let text = Data("sent with PortMessage".utf8)
try PortMessage(msgid: 8, components: [.data(text)], sendPort: port, replyPort: port).send(before: Date() + 1)
let portResult = RunLoop.current.run(mode: .default, seconds: 2, returnAfterSourceHandled: true)
port.invalidate()
let received = inbox.value
check(received?.msgid == 8 && received?.dataComponents == [text] && received?.sendPort == port && received?.replyPort == port,
      "a PortMessage sent to a Port on RunLoop.current arrived (run returned .\(portResult)): \(received.map(String.init(describing:)) ?? "nothing")")

let directory = FileManager.default.temporaryDirectory
let keys: Set<URLResourceKey> = [.isDirectoryKey]
check(try directory.resourceValues(forKeys: keys).isDirectory == true,
      "URLResourceKey is Foundation's, the one URL.resourceValues(forKeys:) takes: \(directory.path) is a directory")

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

// The exit status says whether both recipes did what the checks above say.
let failures = failedChecks.load(ordering: .relaxed)
print(failures == 0 ? "\nall checks passed" : "\n\(failures) check(s) FAILED")
exit(failures == 0 ? 0 : 1)
