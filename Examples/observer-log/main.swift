// observer-log: every activity of the main thread's run loop, printed as an
// observer made with CFRunLoopObserverCreateWithHandler(kCFRunLoopAllActivities)
// would print them.
//
// The loop has a block queued before it runs, a repeating timer that stops
// itself on its third fire, and a block performed from another thread while
// the loop sleeps. The log shows the order of one run (S-RUN-2): entry once;
// then, per pass, BeforeTimers, BeforeSources, BeforeWaiting (only when the
// loop is about to sleep), AfterWaiting; exit once.
//
// It runs a mode of its own, "logged". The main loop's common modes
// (.default among them) also serve DispatchQueue.main (S-EXEC-3), so on the
// main thread they are never empty, as on Apple's systems: a run of
// .default would not end when the timer stops. A mode outside the common
// modes holds only what is added to it, so its run finishes then.
//
//   swift run observer-log
import Glibc
import RunLoopKit
import Synchronization

/// CFRunLoop's names for each activity.
func cfName(_ activity: RunLoop.Activity) -> String {
    switch activity {
    case .entry: "kCFRunLoopEntry"
    case .beforeTimers: "kCFRunLoopBeforeTimers"
    case .beforeSources: "kCFRunLoopBeforeSources"
    case .beforeWaiting: "kCFRunLoopBeforeWaiting"
    case .afterWaiting: "kCFRunLoopAfterWaiting"
    case .exit: "kCFRunLoopExit"
    default: "\(activity)"
    }
}

let start = ContinuousClock.now
/// Milliseconds since the start, for the log.
@Sendable func stamp() -> String {
    let elapsed = ContinuousClock.now - start
    let tenths = elapsed.components.seconds * 10_000 + elapsed.components.attoseconds / 100_000_000_000_000
    let text = "\(tenths / 10).\(tenths % 10)"
    return String(repeating: " ", count: max(0, 6 - text.count)) + text + " ms"
}

func log(_ text: String) { print("\(stamp())  \(text)") }
@Sendable func logFromAnyThread(_ text: String) { print("\(stamp())  \(text)") }

let loop = RunLoop.main
let logged = RunLoop.Mode("logged")

let observer = RunLoopObserver(activities: .allActivities) { _, activity in
    let note = activity == .beforeWaiting ? "   (going to sleep)" : activity == .afterWaiting ? "   (woken up)" : ""
    logFromAnyThread("\(cfName(activity)) (.\(activity))\(note)")
}
loop.add(observer, forMode: logged)

let fireCount = Atomic<Int>(0)  // the timer's block is @Sendable: shared state is atomic
let timer = try Timer(timeInterval: 0.1, repeats: true) { timer in
    let count = fireCount.wrappingAdd(1, ordering: .relaxed).newValue
    logFromAnyThread("    timer fired (\(count) of 3)")
    if count == 3 {
        timer.invalidate()  // the mode's last source or timer: the run returns .finished (S-TMR-4)
        logFromAnyThread("    timer invalidated: nothing left in the mode")
    }
}

loop.add(timer, forMode: logged)
loop.perform(inModes: [logged]) { logFromAnyThread("    block queued before the run") }

// Another thread performs a block onto the main loop at about 150 ms,
// between the timer's fires: it wakes the sleeping loop (S-BLK-1).
let poster = LoopThread(name: "poster")
try poster.start()
try poster.perform {
    usleep(150_000)
    RunLoop.main.perform(inModes: [logged]) { logFromAnyThread("    block performed from thread 'poster'") }
}

log("run(mode: logged, seconds: 2)")
let result = loop.run(mode: logged, seconds: 2)
log("run returned .\(result)")
poster.stop()

// Observers alone do not keep a loop alive (S-RUN-1): with only the observer
// left, a run returns at once, notifying nobody.
log("run again, with only the observer in the mode")
log("run returned .\(loop.run(mode: logged, seconds: 2)), with no activity to log")
observer.invalidate()
