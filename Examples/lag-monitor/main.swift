// lag-monitor: find what blocks a loop thread (卡顿监控).
//
// The tutorials list stall detection (监控应用卡顿) among the uses of a run loop;
// on iOS it is done with an observer that times the gap between
// kCFRunLoopAfterWaiting and kCFRunLoopBeforeWaiting. RunLoopKit hands the
// facts to a `RunLoopMonitor` instead: the kind, mode, thread and duration of
// every callout (observer, timer, source, block) and of every pass. This one
// reports each callout longer than a threshold.
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
        print("LAG: thread '\(callout.threadName)' was blocked \(milliseconds(callout.duration)) by a \(callout.kind) callout in mode \(callout.mode) (threshold \(milliseconds(threshold)))")
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
print("tasks: quick ones (2 ms) arriving every 10 ms, a quick timer, and one slow task (150 ms)\n")

// A one-shot timer on the ui thread's loop, in the common modes like the tasks.
try ui.performAndWait {
    let timer = try Timer(timeInterval: 0.03, repeats: false) { _ in work(ms: 2) }
    RunLoop.current.add(timer, forMode: .common)
}
for index in 1...10 {
    if index == 6 {
        try ui.perform { work(ms: 150) }  // the stall: decoding a big image on the UI thread, say
    } else {
        try ui.perform { work(ms: 2) }
    }
    usleep(10_000)
}
ui.stopAfterDraining()  // runs what is still queued, then stops and joins: the report is complete
print(monitor.summary)
