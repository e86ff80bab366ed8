// common-modes: the scroll-view problem (a default-mode NSTimer stops while a view scrolls) and its fix.
//
// While a UIScrollView is dragged, UIKit runs the main loop in
// UITrackingRunLoopMode. A timer added to the default mode only does not
// fire then: it starves until the loop runs the default mode again. A timer
// added to `.common` is in every mode marked common (UITrackingRunLoopMode is
// one), so it keeps firing (S-MODE-2, S-MODE-3).
//
//   swift run common-modes
import RunLoopKit
import Synchronization

extension RunLoop.Mode {
    /// UIKit's mode while the user drags a scroll view.
    static let tracking = RunLoop.Mode("UITrackingRunLoopMode")
}

/// Fire counts per timer, shared with the timers' blocks (which are @Sendable).
final class Counts: Sendable {
    private let counts = Mutex([String: Int]())
    func add(_ name: String) { counts.withLock { $0[name, default: 0] += 1 } }
    subscript(name: String) -> Int { counts.withLock { $0[name, default: 0] } }
    func reset() { counts.withLock { $0.removeAll() } }
}

let loop = RunLoop.main
let counts = Counts()

// Like UIKit, mark the tracking mode common: `.common` items go into it too.
loop.addCommonMode(.tracking)
print("common modes: \(loop.commonModes.map(\.rawValue).sorted())")

let defaultTimer = try Timer(timeInterval: 0.1, repeats: true) { _ in counts.add("default") }
loop.add(defaultTimer, forMode: .default)
let commonTimer = try Timer(timeInterval: 0.1, repeats: true) { _ in counts.add("common") }
loop.add(commonTimer, forMode: .common)
print("timer A: every 100 ms, added to .default")
print("timer B: every 100 ms, added to .common")

// The "finger": scroll events at 60 Hz, which exist only in the tracking mode.
let finger = try Timer(timeInterval: 1.0 / 60, repeats: true) { _ in counts.add("scroll") }
loop.add(finger, forMode: .tracking)

func fires(_ count: Int) -> String { count == 1 ? "1 fire" : "\(count) fires" }

func report(_ phase: String, _ result: RunLoop.RunResult) {
    print("\(phase)  ->  \(result)")
    print("    timer A (.default): \(fires(counts["default"]))")
    print("    timer B (.common):  \(fires(counts["common"]))")
    if counts["scroll"] > 0 { print("    scroll events handled: \(counts["scroll"])") }
    counts.reset()
}

// Start every timer's schedule now, right before the first run.
let start = Date()
for timer in [defaultTimer, commonTimer, finger] { timer.fireDate = start + timer.timeInterval }

print("")
report("1. idle, default mode, 0.55 s      ", loop.run(mode: .default, seconds: 0.55))
report("2. scrolling, tracking mode, 1.0 s ", loop.run(mode: .tracking, seconds: 1.0))
report("3. idle again, default mode, 0.03 s", loop.run(mode: .default, seconds: 0.03))

print("""

Why: a run of the loop services exactly one mode. While it ran
\(RunLoop.Mode.tracking), timer A, which is only in \(RunLoop.Mode.default), could not
fire; its fires were not queued either: back in the default mode it fired
once, at once, and then on its original schedule (missed fires are skipped,
never delivered in a burst: S-TMR-2). Timer B was added to .common, the set
of modes marked common, which includes the tracking mode, so it fired in
both. The other usual fix, adding the timer to each mode by name,
works too:
    loop.add(timer, forMode: .default)
    loop.add(timer, forMode: .tracking)
""")

for timer in [defaultTimer, commonTimer, finger] { timer.invalidate() }
