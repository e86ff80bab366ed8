// Helpers for the cross-process port tests (Transport/, Naming/,
// Lifetime/): names, the runtime directory and its files, messages,
// errors, threads and processes. The other helpers of those tests are
// ParentSide and LoopThreadExecutor (the parent while a child runs),
// IPCInbox, SequenceChecker, PortChild and ChildOutput (what a child reports).
//
// The second process is a Swift Testing exit test: `#require(processExitsWith:)`
// runs its closure in a child process (this test binary again), and awaits
// its exit. The closure receives values through its capture list (Codable
// values: `[name = name as String]`); the child inherits the environment.
//
// Runtime directory. `RUNLOOPKIT_RUNTIME_DIR` is read by every ipc port
// creation in a process, and tests run in parallel, so the test process never
// changes it: a parent and its children meet in the default runtime directory
// under names unique to the test (`PortProcess.uniqueName`), which the test
// removes at its end. A test about the directory itself runs its ports in
// children, each of which sets `RUNLOOPKIT_RUNTIME_DIR` to a directory of the
// test's own before it makes any port (a child runs nothing else).
//
// The parent while a child runs. Swift Testing awaits an exit test with
// blocking reads of the child's pipes (standard error, the back channel) on
// Swift concurrency threads; on this 2-core machine that is the whole
// cooperative pool, so no `await` anywhere in the test process makes
// progress until the child exits (code after an `await` then runs only once
// the child has given up, which looks like a stall of the ports). So what the
// parent does during a child's life runs on threads of its own: ports receive
// on LoopThreads, whose handlers may reply, schedule or acknowledge, and
// anything else runs in a `ParentSide` started before the exit test (async
// code on a `LoopThreadExecutor`). The test awaits only once the child has
// exited, and children never wait for the test's async code.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

// MARK: - Names, directories, files

extension PortProcess {
    private static let counter = Locked(0)

    /// A port name no other test, process or earlier run uses: starts with a
    /// letter, at most 64 characters.
    static func uniqueName(_ label: String) -> String {
        let serial = counter.withLock { $0 += 1; return $0 }
        return "t\(getpid())-\(serial)-\(UInt32.random(in: 0...UInt32.max))-\(label)"
    }

    /// The default runtime directory, where parents and children meet.
    static func runtimeDirectory() throws -> String { try PortNameServer.directory() }

    /// Removes what a name leaves in the default runtime directory: its lock
    /// file (which RunLoopKit keeps by design) and a socket file a killed
    /// process left behind. Call it once nobody holds the name.
    static func removeNameFiles(_ name: String) {
        guard let directory = try? runtimeDirectory() else { return }
        unlink("\(directory)/\(name).lock")
        unlink("\(directory)/\(name).port")
    }

    /// A fresh directory of mode 0700 under /tmp (mkdtemp).
    static func makeTemporaryDirectory(_ label: String) throws -> String {
        var template = Array("/tmp/rlkt-\(label)-XXXXXX".utf8CString)
        guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw TestFailure("mkdtemp failed: errno \(errno)")
        }
        return String(cString: made)
    }

    /// What `lstat` says about a path: its type, permission bits and owner.
    struct FileStatus: Equatable, CustomStringConvertible {
        enum Kind: String { case directory, socket, file, symlink, other }
        let kind: Kind
        let permissions: UInt32
        let owner: UInt32

        var description: String { "\(kind) mode \(String(permissions, radix: 8)) uid \(owner)" }
    }

    static func status(_ path: String) -> FileStatus? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        let kind: FileStatus.Kind = switch info.st_mode & S_IFMT {
        case S_IFDIR: .directory
        case S_IFSOCK: .socket
        case S_IFREG: .file
        case S_IFLNK: .symlink
        default: .other
        }
        return FileStatus(kind: kind, permissions: info.st_mode & 0o7777, owner: info.st_uid)
    }

    static func exists(_ path: String) -> Bool { access(path, F_OK) == 0 }

    /// Waits until some process holds an exclusive flock on `path`.
    static func waitUntilLocked(_ path: String, timeout: Double = 30) -> Bool {
        RunLoopKitTests_waitUntil(timeout: timeout) {
            FileIdentity(path: path).flatMap(FileLocks.exclusiveHolder(of:)) != nil
        }
    }

    /// The ipc socket path of a local `.ipc` port.
    static func socketPath(of port: Port) -> String? { port.address.ipcPath }

    // MARK: - Messages

    static func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }

    static func data(_ text: String) -> PortMessage.Component { .data(Data(text.utf8)) }

    /// The first data component as text ("" if none).
    static func text(of message: PortMessage) -> String { message.dataComponents.first.map(text) ?? "" }

    /// The port components of a message, in order.
    static func ports(of message: PortMessage) -> [Port] {
        message.components.compactMap { if case let .port(port) = $0 { port } else { nil } }
    }

    /// An 8-byte little-endian sequence number followed by `padding` bytes.
    static func sequenceData(_ value: UInt64, padding: Int = 0) -> Data {
        var bytes = [UInt8](repeating: 0xA5, count: 8 + padding)
        for index in 0..<8 { bytes[index] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(index))) }
        return Data(bytes)
    }

    static func sequenceValue(_ data: Data) -> UInt64? {
        guard data.count >= 8 else { return nil }
        var value: UInt64 = 0
        for (index, byte) in data.prefix(8).enumerated() { value |= UInt64(byte) << (8 * UInt64(index)) }
        return value
    }

    // MARK: - Errors

    /// The name of a PortError's case, for expectations that do not depend
    /// on the wording of its message.
    static func caseName(_ error: (any Error)?) -> String {
        guard let error = error as? PortError else { return error.map { "not a PortError: \($0)" } ?? "no error" }
        return error.caseName  // PortTestSupport.swift
    }

    /// The error `body` throws, nil if it returns.
    static func error(of body: () throws -> Void) -> (any Error)? {
        do {
            try body()
            return nil
        } catch {
            return error
        }
    }

    static func error(of body: () async throws -> Void) async -> (any Error)? {
        do {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    // MARK: - Threads

    /// Runs `body` on a new thread (with a run loop of its own if it asks for
    /// one) and awaits its result without blocking a Swift concurrency
    /// thread. Use it only when no child process is running: see
    /// `ParentSide` for work done while one is.
    static func onThread<T: Sendable>(
        _ name: String = "rlkt-ipc", _ body: @escaping @Sendable () throws -> T
    ) async throws -> T {
        try await ParentSide(name, body).value()
    }

    /// `waitUntil` (TestSupport.swift) on a thread of its own, so that an
    /// async test never blocks a Swift concurrency thread while it waits.
    static func waitUntil(timeout: Double = 30, _ condition: @escaping @Sendable () -> Bool) async -> Bool {
        (try? await onThread("rlkt-wait") { RunLoopKitTests_waitUntil(timeout: timeout, condition) }) ?? false
    }

    /// Watches process `pid` (looking every half millisecond) until it has
    /// died: it is a zombie waiting to be reaped, or gone. Returns the
    /// CLOCK_MONOTONIC time it was first seen dead, nil after `timeout`.
    static func whenDead(_ pid: Int32, timeout: Double = 30) -> UInt64? {
        let deadline = now() + UInt64(timeout * 1e9)
        while now() < deadline {
            if isDead(pid) { return now() }
            pause(microseconds: 500)
        }
        return nil
    }

    /// Whether process `pid` has died: a zombie waiting to be reaped, or gone.
    static func isDead(_ pid: Int32) -> Bool {
        let stat = readSmallFile("/proc/\(pid)/stat") ?? ""
        // "pid (comm) S ...": the state follows the last ')'.
        guard let close = stat.lastIndex(of: ")") else { return true }  // no /proc entry: reaped
        let state = stat[stat.index(after: close)...].trimmingPrefix(" ").first
        return state == "Z" || state == "X"
    }

    /// Nanoseconds on CLOCK_MONOTONIC, which all processes share.
    static func now() -> UInt64 { MonotonicClock.now() }

    static func milliseconds(_ nanoseconds: UInt64) -> Double { Double(nanoseconds) / 1e6 }

    /// Blocks the calling thread: the *input* of a test (a process that
    /// appears late), never a synchronisation.
    static func pause(milliseconds: Int) { pause(microseconds: milliseconds * 1000) }

    static func pause(microseconds: Int) {
        var request = timespec(tv_sec: microseconds / 1_000_000, tv_nsec: (microseconds % 1_000_000) * 1000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
    }
}

/// TestSupport's `waitUntil`, under a name that `PortProcess.waitUntil` can call.
private func RunLoopKitTests_waitUntil(timeout: Double, _ condition: () -> Bool) -> Bool {
    waitUntil(timeout: timeout, condition)
}
