// Helpers for the timer, observer, block, LoopThread, keep-alive, misuse and
// monitor tests. Swift Testing runs tests in parallel on shared pool threads,
// so run-loop code in these tests runs on threads made for the test
// (`SpawnedThread`, `LoopThread`), never on a pool thread's `RunLoop.current`.
import CLinuxSupport
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitCore
import RunLoopKitTesting
import Testing

extension Locked where State == [UInt64] {
    package func append(_ element: UInt64) { withLock { $0.append(element) } }
}

/// A `SpawnedThread` whose loop measures its timers, `perform(afterDelay:)`
/// and run deadlines on a `TestClock` of its own (S-TMR-7), given to the
/// loop before `body` runs. Time moves only when the test advances the clock
/// (or `advanceWhenIdle` does), so no timer test waits for real time.
///
/// On such a loop a run's deadline passes only when the clock is advanced,
/// so a timer bug that should end a run with a wrong result would leave it
/// waiting forever instead. `join(timeout:)` is the safety net, never the
/// synchronisation: if `body` has not returned after `timeout` seconds of
/// real time, it records an issue and advances the clock by a day at a time
/// (every deadline passes, every timer comes due), so that the test fails
/// with the run's result instead of hanging.
package final class TestClockThread<T: Sendable> {
    package let clock = TestClock()
    private let finished = DispatchSemaphore(value: 0)
    private let thread: SpawnedThread<T>

    package init(named name: String, _ body: @escaping @Sendable (TestClock, RunLoop) throws -> T) {
        let clock = self.clock, finished = self.finished
        thread = SpawnedThread(named: name) {
            defer { finished.signal() }
            let loop = RunLoop.current
            loop.use(clock)
            return try body(clock, loop)
        }
    }

    /// Waits for `body` to return (see the safety net above) and returns
    /// what it returned, or rethrows what it threw.
    package func join(timeout: Double = 30, sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        if finished.wait(timeout: .now() + timeout) == .timedOut {
            Issue.record("the test-clock thread did not finish within \(timeout) s of real time; advancing its clock to end its runs", sourceLocation: sourceLocation)
            var advances = 0
            while finished.wait(timeout: .now() + 1) == .timedOut {
                advances += 1
                // Not waiting on the clock: joining would hang. Leave the thread.
                guard advances <= 10 else { throw TestFailure("the test-clock thread is stuck, and not on its clock") }
                clock.advance(by: .seconds(86_400))
            }
        }
        return try thread.join()
    }

    /// Runs `body` on a new test-clock thread and waits for it.
    package static func run(
        named name: String, sourceLocation: SourceLocation = #_sourceLocation,
        _ body: @escaping @Sendable (TestClock, RunLoop) throws -> T
    ) throws -> T {
        try TestClockThread(named: name, body).join(sourceLocation: sourceLocation)
    }
}

/// CLOCK_MONOTONIC in nanoseconds: the clock timers and deadlines run on.
package func monotonicNow() -> UInt64 { MonotonicClock.now() }

package let nanosecondsPerMillisecond: UInt64 = 1_000_000

/// Waits for `semaphore` up to `seconds`: a safety net that turns a hang into
/// a failed expectation. True if it was signalled.
package func waitFor(_ semaphore: DispatchSemaphore, seconds: Double = 10) -> Bool {
    semaphore.wait(timeout: .now() + seconds) == .success
}

/// A source that is never signalled: it only keeps a mode from being empty.
package func keepAliveSource() -> CustomSource { CustomSource {} }

/// An observer that signals `semaphore` every time the loop is about to
/// sleep: how a test knows that the loop has reached step 7 of S-RUN-2.
@discardableResult
package func signalBeforeWaiting(
    _ semaphore: DispatchSemaphore, on loop: RunLoop, mode: RunLoop.Mode = .default
) -> RunLoopObserver {
    let observer = RunLoopObserver(activities: .beforeWaiting) { _, _ in semaphore.signal() }
    loop.add(observer, forMode: mode)
    return observer
}

/// Blocks the calling thread for `milliseconds` without using the run loop:
/// the *input* of tests that need a busy loop, never a synchronisation.
package func blockThread(milliseconds: Int) {
    var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
}

// MARK: - Process probes (S-KEEP-3, S-KEEP-2)

package enum ProcessProbe {
    /// Open file descriptors of this process (entries of /proc/self/fd,
    /// without the one used to list them).
    package static func openFileDescriptorCount() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            // In place: a copy of the whole d_name reads past a short last entry.
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { count += 1 }
        }
        return count - 1
    }

    /// Resident set size in bytes (second field of /proc/self/statm, in pages).
    package static func residentBytes() -> Int {
        let fields = readFile("/proc/self/statm").split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return -1 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Whether the kernel thread `tid` of this process still exists.
    package static func threadExists(_ tid: Int32) -> Bool {
        access("/proc/self/task/\(tid)", F_OK) == 0
    }

    /// Whether the kernel thread `tid`, joined or ending, is gone, or goes
    /// within `seconds` (a safety net: it returns once the thread is gone).
    /// pthread_join returns as soon as the kernel clears the thread's id, a
    /// moment before it reaps the task and its /proc/self/task entry: a
    /// look right after a join may still see it (seen once under
    /// ThreadSanitizer's load), and a loaded machine may hold that moment
    /// back for seconds.
    package static func threadGone(_ tid: Int32, within seconds: Double = 10) -> Bool {
        waitUntil(timeout: seconds) { !threadExists(tid) }
    }

    /// The OS-level name of thread `tid` of this process, as `ps -L` shows it.
    package static func kernelThreadName(_ tid: Int32) -> String? {
        let text = readFile("/proc/self/task/\(tid)/comm")
        return text.isEmpty ? nil : String(text.dropLast(text.hasSuffix("\n") ? 1 : 0))
    }

    package static func readFile(_ path: String) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return "" }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Whether ThreadSanitizer runs this process (it slows everything and
    /// keeps memory of its own).
    package static var isUnderThreadSanitizer: Bool { rlk_running_under_thread_sanitizer() != 0 }

    /// Whether AddressSanitizer runs this process: its quarantine holds
    /// freed memory back (RSS grows), and LeakSanitizer checks at exit.
    package static var isUnderAddressSanitizer: Bool { rlk_running_under_address_sanitizer() != 0 }

    /// The sanitizer this process runs under, nil for none: what a test
    /// that measures time or memory names when it skips that measure
    /// (docs/contributing.md, "Tests that measure memory or time").
    package static var sanitizerName: String? {
        isUnderThreadSanitizer ? "ThreadSanitizer" : isUnderAddressSanitizer ? "AddressSanitizer" : nil
    }
}

/// The error tests throw from tasks to check that it comes back unchanged.
package struct ProbeError: Error, Equatable {
    package let code: Int
    package init(code: Int) { self.code = code }
}

/// Writes `text` to fd 2, unbuffered: how an exit test's child reports to its parent.
package func writeToStandardError(_ text: String) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeMutableBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
        if written <= 0 { break }
        offset += written
    }
}
