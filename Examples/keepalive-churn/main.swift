// keepalive-churn: the keep-alive leak experiment (S-KEEP-3).
//
// The experiment starts 100,000 keep-alive NSThreads in a loop, each kept alive by
// `[runLoop addPort:[NSMachPort port] ...]; [runLoop run]`, and watch memory
// climb: `run` cannot be stopped, so no thread, loop or port is ever freed.
// Here each of N LoopThreads starts, runs one task and stops; afterwards the
// process must hold exactly the file descriptors it held before, and about
// the same memory. Exits with status 1 on a leak.
//
//   swift run -c release keepalive-churn [--count N]   (default 100,000)
import Glibc
import RunLoopKit

/// Open file descriptors of this process (the directory listing's own fd
/// counts too, the same at both ends).
func openFileDescriptors() -> Int {
    (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count) ?? -1
}

/// Resident set size in bytes (second field of /proc/self/statm, in pages).
func residentBytes() -> Int {
    guard let statm = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return -1 }
    let fields = statm.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return -1 }
    return pages * sysconf(Int32(_SC_PAGESIZE))
}

func mebibytes(_ bytes: Int) -> String {
    let tenths = bytes * 10 / (1 << 20)
    return "\(tenths / 10).\(tenths % 10) MiB"
}

func milliseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
}

func microseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1_000_000 + duration.components.attoseconds / 1_000_000_000_000
}

/// Starts a LoopThread, runs one task on it, stops it. Returns what the task returned.
func churnOne(_ index: Int) throws -> Int {
    let thread = LoopThread(name: "churn-\(index)")
    try thread.start()
    let answer = try thread.performAndWait { index }
    thread.stop()
    return answer
}

func usage() -> Never {
    print("usage: keepalive-churn [--count N]   (N above 0; default 100000)")
    exit(2)
}

var count = 100_000
let arguments = CommandLine.arguments
if let flag = arguments.firstIndex(of: "--count") {
    guard flag + 1 < arguments.count, let value = Int(arguments[flag + 1]), value > 0 else { usage() }
    count = value
} else if arguments.count > 1 {
    usage()
}

// Warm up first: the first threads grow the allocator's per-thread arenas
// and make the main loop and the logger, which stay for the process's life.
let warmUp = min(count, 200)
for index in 0..<warmUp { _ = try churnOne(index) }

let fdsBefore = openFileDescriptors()
let rssBefore = residentBytes()
print("start: \(fdsBefore) open fds, RSS \(mebibytes(rssBefore)) (after \(warmUp) warm-up threads)")
print("starting and stopping \(count) LoopThreads, one task each...")

let started = ContinuousClock.now
var checksum = 0
let step = max(1, count / 10)
for index in 0..<count {
    checksum &+= try churnOne(index)
    if (index + 1) % step == 0 && index + 1 < count {
        print("  \(index + 1) threads: \(openFileDescriptors()) fds, RSS \(mebibytes(residentBytes()))")
    }
}
let elapsed = ContinuousClock.now - started

let fdsAfter = openFileDescriptors()
let rssAfter = residentBytes()
let perThread = elapsed / count
print("end:   \(fdsAfter) open fds, RSS \(mebibytes(rssAfter))")
print("elapsed: \(milliseconds(elapsed)) ms (\(microseconds(perThread)) µs per thread)")

// Every task ran exactly once: the sum of 0..<count.
let tasksOK = checksum == (count - 1) * count / 2
// RSS may wander a little (allocator caches); a leak of even 100 bytes per
// thread over 100,000 threads is well beyond this bound.
let rssBound = 8 << 20
let fdsOK = fdsAfter == fdsBefore
let rssOK = rssAfter - rssBefore <= rssBound
print("fds:   \(fdsBefore) -> \(fdsAfter) \(fdsOK ? "(same)" : "(LEAKED \(fdsAfter - fdsBefore))")")
print("RSS:   \(mebibytes(rssBefore)) -> \(mebibytes(rssAfter)), growth \(mebibytes(max(0, rssAfter - rssBefore))) (bound \(mebibytes(rssBound)))")
print("tasks: \(tasksOK ? "all \(count) ran once" : "MISSING OR REPEATED (checksum \(checksum))")")
if fdsOK && rssOK && tasksOK {
    print("OK")
} else {
    print("LEAK")
    exit(1)
}
