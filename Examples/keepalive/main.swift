import RunLoopKit

let loop = RunLoop.current
let observer = RunLoopObserver(activities: .allActivities) { _, activity in print("  activity:", activity) }
loop.add(observer, forMode: .default)
let t0 = Date()
let timer = try Timer(timeInterval: 0.05, repeats: true) { timer in
    print("tick", Date().timeIntervalSince(t0))
    if Date().timeIntervalSince(t0) > 0.12 { timer.invalidate() }
}
loop.add(timer, forMode: .default)
print("result:", loop.run(mode: .default, seconds: 2))

let worker = LoopThread(name: "worker")
try worker.start()
try worker.perform { print("task on", LoopThread.currentName ?? "?") }
print("sum:", try worker.performAndWait { 1 + 2 })
worker.stop()
do { try worker.perform {} } catch { print("after stop:", error) }
