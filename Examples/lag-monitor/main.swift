// lag-monitor: find what blocks a loop thread, and name the block that did it.
//
// A loop thread answers no faster than its longest callout: while one block,
// timer or handler runs, everything else queued for that thread waits. On iOS
// and macOS such stalls are found with a CFRunLoopObserver (see Apple's
// CFRunLoopObserver reference and the "Run Loops" chapter of the Threading
// Programming Guide for the activities) that times each pass from
// kCFRunLoopAfterWaiting to kCFRunLoopBeforeWaiting: how long the loop was
// awake and busy before it could sleep again. RunLoopKit hands the facts to a
// `RunLoopMonitor` instead: the kind, mode, thread and duration of every
// callout (observer, timer, source, block) and of every pass, and, for a
// block, which one it was: the tag given to `perform(tag:)`, and the file and
// line of the `perform` call (`CalloutReport.origin`). This monitor reports
// each callout longer than a threshold.
//
//   swift run lag-monitor [--threshold-ms N]     (default 50)
import Glibc
import RunLoopKit
import Synchronization

/// Reports every callout that ran longer than `threshold`, on the loop's thread.
final class LagMonitor: RunLoopMonitor {
    let threshold: Duration
    private let stats = Mutex((callouts: 0, passes: 0, reports: 0, busiestPass: Duration.zero))

    init(threshold: Duration) { self.threshold = threshold }

    func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) {
        let slow = callout.duration > threshold
        stats.withLock {
            $0.callouts += 1
            if slow { $0.reports += 1 }
        }
        guard slow else { return }
        // A block (or a delayed perform's timer) says which one it was:
        // "block tag 'decode-image' (main.swift:NN)", or "block main.swift:NN".
        let culprit = callout.origin.map { "\(callout.kind) \($0)" } ?? "a \(callout.kind) callout"
        print("LAG: thread '\(callout.threadName)' was blocked \(milliseconds(callout.duration)) by \(culprit) in mode \(callout.mode) (threshold \(milliseconds(threshold)))")
    }

    func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) {
        let busy = Duration.nanoseconds(Int64(pass.durationNanoseconds - pass.sleptNanoseconds))
        stats.withLock {
            $0.passes += 1
            $0.busiestPass = max($0.busiestPass, busy)
        }
    }

    var summary: String {
        stats.withLock {
            "\($0.callouts) callouts in \($0.passes) passes watched, \($0.reports) over the threshold; busiest pass: \(milliseconds($0.busiestPass)) awake"
        }
    }
}

func milliseconds(_ duration: Duration) -> String {
    let tenths = duration.components.seconds * 10_000 + duration.components.attoseconds / 100_000_000_000_000
    return "\(tenths / 10).\(tenths % 10) ms"
}

/// Work that takes about `ms` milliseconds of the thread's time.
@Sendable func work(ms: Int) { usleep(UInt32(ms * 1_000)) }

// --threshold-ms N
var thresholdMs = 50
let arguments = CommandLine.arguments
if let flag = arguments.firstIndex(of: "--threshold-ms") {
    guard flag + 1 < arguments.count, let value = Int(arguments[flag + 1]), value > 0 else {
        print("usage: lag-monitor [--threshold-ms N]   (N: milliseconds, above 0; default 50)")
        exit(2)
    }
    thresholdMs = value
} else if arguments.count > 1 {
    print("usage: lag-monitor [--threshold-ms N]   (N: milliseconds, above 0; default 50)")
    exit(2)
}

let ui = LoopThread(name: "ui-thread")
try ui.start()
let monitor = LagMonitor(threshold: .milliseconds(thresholdMs))
ui.runLoop!.monitor = monitor  // any thread; takes effect at the loop's next pass
print("watching thread 'ui-thread', threshold \(thresholdMs) ms")
print("tasks: quick ones (2 ms) arriving every 10 ms, a quick timer, and two slow tasks (80 ms, and 150 ms tagged 'decode-image')\n")

// A one-shot timer on the ui thread's loop, in the common modes like the tasks.
try ui.performAndWait {
    let timer = try Timer(timeInterval: 0.03, repeats: false) { _ in work(ms: 2) }
    RunLoop.current.add(timer, forMode: .common)
}
for index in 1...10 {
    switch index {
    case 3:
        try ui.perform { work(ms: 80) }  // untagged: the report names this line
    case 6:
        // The stall: decoding a big image on the UI thread, say. The tag
        // names it in the report, beside this line.
        try ui.perform(tag: "decode-image") { work(ms: 150) }
    default:
        try ui.perform { work(ms: 2) }
    }
    usleep(10_000)
}
ui.stopAfterDraining()  // runs what is still queued, then stops and joins: the report is complete
print(monitor.summary)
