// keepalive: the keep-alive thread of Apple's threading guide, done with LoopThread.
//
// A named worker thread owns a run loop that stays alive between tasks. The
// main thread hands it work without waiting (fire-and-forget), with waiting
// for a result or an error (performSelector:onThread:waitUntilDone:YES); then
// stops it cleanly. Last, the same with async/await. No NSMachPort trick, no
// `run()` that cannot be stopped, no retain cycle (S-KEEP-1, S-KEEP-2).
//
//   swift run keepalive        (or ./scripts/demo.sh)
import Glibc
import RunLoopKit
import Synchronization

/// The OS-level name of a thread of this process, as `ps -L` and `top -H` show it.
func osThreadName(_ tid: Int32) -> String {
    guard let data = try? Data(contentsOf: URL(fileURLWithPath: "/proc/self/task/\(tid)/comm")) else {
        return "<no such thread>"
    }
    return String(decoding: data, as: UTF8.self).filter { $0 != "\n" }
}

/// Where the worker's tasks run, for the printout.
@Sendable func here() -> String {
    "thread '\(LoopThread.currentName ?? RunLoop.current.threadName)'"
}

struct ParseError: Error, CustomStringConvertible {
    let input: String
    var description: String { "ParseError: '\(input)' is not a number" }
}

print("== 1. start a named worker thread")
let worker = LoopThread(name: "worker")
try worker.start()  // returns once the thread's loop is ready
let workerTID = worker.threadID!
print("worker is running: \(worker.isRunning), kernel tid \(workerTID)")
print("OS thread name (/proc/self/task/\(workerTID)/comm): \(osThreadName(workerTID))")

print("\n== 2. fire-and-forget tasks (perform): they run in order, on the worker")
for index in 1...3 {
    try worker.perform { print("  task \(index) runs on \(here())") }
}
// performAndWait is also a barrier: the three tasks above have run when it returns.
let sameLoop = try worker.performAndWait { RunLoop.current === worker.runLoop }
print("the tasks ran on the worker's own run loop: \(sameLoop)")

print("\n== 3. performAndWait: the caller blocks until the task has run, and gets its result")
let (sum, ranOn) = try worker.performAndWait { ((1...100).reduce(0, +), here()) }
print("sum of 1...100 = \(sum), computed on \(ranOn)")

print("\n== 4. performAndWait: an error thrown on the worker comes back to the caller")
do {
    let value: Int = try worker.performAndWait {
        let input = "forty-two"
        guard let number = Int(input) else { throw ParseError(input: input) }
        return number
    }
    print("unexpected: got \(value)")
} catch {
    print("caught on the main thread: \(error)")
}

print("\n== 5. the thread stays alive between tasks (its loop sleeps, using no CPU)")
let workerLoop = worker.runLoop!
usleep(20_000)  // lets the worker finish the pass that ran the last task
let passesBefore = workerLoop.passesCompleted
usleep(300_000)
let passesAfter = workerLoop.passesCompleted
print("loop passes during 300 ms of idleness: \(passesAfter - passesBefore) (asleep in epoll_wait: \(workerLoop.isWaiting))")
let stillThere = try worker.performAndWait { here() }
print("then the same thread answers at once: \(stillThere), tid still \(worker.threadID.map(String.init) ?? "none")")

print("\n== 6. stop(): finishes the task in progress, ends the loop, joins the thread")
worker.stop()
print("isRunning: \(worker.isRunning), runLoop: \(worker.runLoop.map { "\($0)" } ?? "nil")")
print("thread \(workerTID) in /proc/self/task: \(osThreadName(workerTID))")
worker.stop()  // a second stop is harmless
print("stopping twice is harmless")

print("\n== 7. after stop, every submission fails with a clear error")
do { try worker.perform { print("never runs") } } catch { print("perform:        \(error)") }
do { try worker.performAndWait { print("never runs") } } catch { print("performAndWait: \(error)") }
do { try worker.start() } catch { print("start:          \(error)") }

print("\n== 8. stop() discards queued tasks; stopAfterDraining() runs them first")
/// Counts the tasks that ran; shared between threads, so behind a Mutex.
final class RunCount: Sendable {
    private let count = Mutex(0)
    func increment() { count.withLock { $0 += 1 } }
    var value: Int { count.withLock { $0 } }
}

let hasty = LoopThread(name: "hasty")
let hastyCount = RunCount()
let firstTaskStarted = Atomic<Bool>(false)
try hasty.start()
while hasty.runLoop?.isWaiting == false { usleep(1_000) }  // idle, as a keep-alive thread mostly is
try hasty.perform {
    firstTaskStarted.store(true, ordering: .releasing)
    usleep(100_000)
    hastyCount.increment()
}
while !firstTaskStarted.load(ordering: .acquiring) { usleep(1_000) }
for _ in 2...4 { try hasty.perform { hastyCount.increment() } }
hasty.stop()  // while task 1 runs: it finishes, tasks 2 to 4 are discarded
print("stop():              \(hastyCount.value) of 4 tasks ran (stopped while task 1 ran; the 3 queued behind it were discarded)")

let patient = LoopThread(name: "patient")
let patientCount = RunCount()
try patient.start()
try patient.perform { usleep(50_000); patientCount.increment() }
for _ in 2...4 { try patient.perform { patientCount.increment() } }
patient.stopAfterDraining()  // runs what is queued, then stops and joins
print("stopAfterDraining(): \(patientCount.value) of 4 tasks ran")

print("\n== 9. performAndAwait: a result without blocking the caller's thread")
// Last on purpose: once main.swift has awaited, the rest of its top-level
// code runs on the main actor, which Linux may run on a thread other than the
// main one (see the manual, "Getting Started": Swift 6 and the main thread).
let asyncWorker = LoopThread(name: "async-worker")
try asyncWorker.start()
let answer = try await asyncWorker.performAndAwait { "\(6 * 7) from \(here())" }
print("awaited: \(answer)")
asyncWorker.stop()

print("\ndone: every worker thread has stopped and been joined")
