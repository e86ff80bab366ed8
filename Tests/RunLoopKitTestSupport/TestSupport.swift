// Shared helpers for the run-loop behaviour tests (ThreadTests, ModeTests,
// RunTests, CustomSourceTests, SocketSourceTests).
//
// Each test runs its loop on a thread of its own (`SpawnedThread`, which
// says why).
import CLinuxSupport
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitCore
import RunLoopKitTesting

// MARK: - Locked state

/// Reading and replacing a `Locked` value in one call, for tests: the
/// core's `Locked` (a pthread mutex, which ThreadSanitizer understands).
extension Locked {
    package var value: State {
        get { withLock { $0 } }
        set { withLock { $0 = newValue } }
    }
}

/// An ordered record of what happened, appended to from any thread.
package final class EventLog: Sendable {
    private let entries = Locked<[String]>([])

    package init() {}

    package func add(_ entry: String) { entries.withLock { $0.append(entry) } }
    package var all: [String] { entries.value }
    package var count: Int { entries.withLock { $0.count } }
    package func count(of entry: String) -> Int { entries.withLock { $0.filter { $0 == entry }.count } }
}

/// A thread-safe counter.
package final class Counter: Sendable {
    private let count = Locked(0)

    package init() {}
    @discardableResult
    package func increment() -> Int { count.withLock { $0 += 1; return $0 } }
    package var value: Int { count.value }
}

/// A one-shot hand-over of a value from one thread to another, with a
/// timeout as safety net.
package final class Handoff<Value>: @unchecked Sendable {
    // @unchecked Sendable: `slot` is Locked; the semaphore is thread-safe.
    private let slot = Locked<Value?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    package init() {}

    package func put(_ value: Value) {
        slot.value = value
        ready.signal()
    }

    package func take(timeout: Double = 30) throws -> Value {
        guard ready.wait(timeout: .now() + timeout) == .success, let value = slot.value else {
            throw TestFailure("nothing was handed over within \(timeout) s")
        }
        return value
    }
}

package struct TestFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}

// MARK: - Threads

/// Sets the calling thread's OS-level name (Linux keeps 15 bytes of it).
package func setCurrentThreadName(_ name: String) {
    _ = rlk_set_current_thread_name(name)
}

/// The kernel id of the calling thread, from /proc/thread-self
/// ("<pid>/task/<tid>").
package func currentThreadID() -> Int32 {
    var buffer = [CChar](repeating: 0, count: 64)
    let count = readlink("/proc/thread-self", &buffer, buffer.count - 1)
    guard count > 0 else { return -1 }
    let link = String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    return Int32(link.split(separator: "/").last ?? "") ?? -1
}

/// The OS-level name of thread `tid` of this process (/proc/self/task/<tid>/comm).
package func osThreadName(tid: Int32) -> String? {
    guard let text = readSmallFile("/proc/self/task/\(tid)/comm") else { return nil }
    return text.hasSuffix("\n") ? String(text.dropLast()) : text
}

/// CPU time thread `tid` has used so far, in nanoseconds (first field of schedstat).
package func threadCPUNanoseconds(tid: Int32) -> UInt64? {
    guard let text = readSmallFile("/proc/self/task/\(tid)/schedstat") else { return nil }
    return text.split(separator: " ").first.flatMap { UInt64($0) }
}

package func readSmallFile(_ path: String) -> String? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 4096)
    let count = read(fd, &buffer, buffer.count)
    guard count >= 0 else { return nil }
    return String(decoding: buffer[..<count], as: UTF8.self)
}

/// How many file descriptors the process has open (/proc/self/fd, minus the
/// directory's own).
package func openFileDescriptorCount() -> Int {
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
    return count - 1  // the fd opendir itself holds
}

/// A weak reference that can leave the thread that made the loop.
package final class WeakLoopBox: @unchecked Sendable {
    // Written once, in init.
    package weak var loop: RunLoop?
    package init(_ loop: RunLoop) { self.loop = loop }
}

/// A weak reference to any object, that can leave the thread that made it:
/// whether the object is gone is what a test of a release asks.
package final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    // Written once, in init.
    package weak var object: Object?
    package init(_ object: Object) { self.object = object }
}

/// A pipe, both ends non-blocking.
package func makePipe() throws -> (read: Int32, write: Int32) {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { throw TestFailure("pipe failed: errno \(errno)") }
    for fd in fds { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
    return (fds[0], fds[1])
}

// MARK: - Waiting

/// Waits until `condition` holds, looking every millisecond (or every
/// `interval` seconds, for a condition that costs more than a glance:
/// reading and decoding files), for at most `timeout` seconds (a safety
/// net, not the synchronisation). Returns whether it held.
@discardableResult
package func waitUntil(timeout: Double = 30, every interval: Double = 0.001, _ condition: () -> Bool) -> Bool {
    let deadline = DispatchTime.now() + timeout
    while !condition() {
        if DispatchTime.now() >= deadline { return false }
        usleep(useconds_t(interval * 1_000_000))
    }
    return true
}

// MARK: - Run loop helpers

extension RunLoop.Activity {
    /// The single activity's name, as recorded in the logs.
    package var name: String { description }
}

/// Records every activity of `mode` of `loop` into `log`, as "<prefix><activity>".
@discardableResult
package func recordActivities(
    of loop: RunLoop, mode: RunLoop.Mode, into log: EventLog, prefix: String = "",
    activities: RunLoop.Activity = .allActivities
) -> RunLoopObserver {
    let observer = RunLoopObserver(activities: activities) { _, activity in log.add(prefix + activity.name) }
    loop.add(observer, forMode: mode)
    return observer
}

/// A custom source that never fires, only keeps a mode from being empty
/// (S-RUN-1).
package func unsignalledSource() -> CustomSource {
    CustomSource(order: .max) {}
}

/// A timer that will not fire during a test, another way of keeping a mode
/// alive.
package func distantTimer() -> RunLoopKit.Timer {
    try! RunLoopKit.Timer(timeInterval: 3600, repeats: false) { _ in }
}

/// `log` without the passes that slept, woke and found nothing to do: the
/// ones a wake-up still pending from before the loop slept causes (adding a
/// socket source wakes the loop, even from its own thread), or a ZeroMQ
/// ZMQ_FD signal, which libzmq documents as possibly spurious. Returns how
/// many were dropped, so that a test can bound them.
package func droppingEmptyPasses(_ log: [String]) -> (log: [String], dropped: Int) {
    let emptyPass = ["beforeTimers", "beforeSources", "beforeWaiting", "afterWaiting"]
    var result: [String] = []
    var dropped = 0
    var index = 0
    while index < log.count {
        if result.last == "afterWaiting", Array(log[index...].prefix(emptyPass.count)) == emptyPass {
            index += emptyPass.count
            dropped += 1
            continue
        }
        result.append(log[index])
        index += 1
    }
    return (result, dropped)
}

/// A unique inproc endpoint.
package func uniqueEndpoint(_ label: String = "test") -> String {
    "inproc://\(label)-\(UUID().uuidString)"
}
