// Helpers for the cross-process port tests (PortIPCTests, PortNameServerTests,
// PeerDeathTests).
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
//
// Reporting. A child writes `FAIL: ...` lines for failed checks and
// `REPORT key=value` lines for what the parent should know on its standard
// error; the parent turns the FAIL lines into issues (`ChildOutput`). Issues
// recorded with `#expect` in a child reach the parent too, but without their
// details, so children use `PortChild.check`.
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

private final class IPCThreadJob: @unchecked Sendable {
    // @unchecked Sendable: handed to the new thread once, used there only.
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}

// MARK: - The parent's side while a child runs

/// Work a test process does *while* one of its exit-test children runs.
///
/// Swift Testing awaits an exit test with blocking reads of the child's
/// pipes (its standard error and the back channel) on Swift concurrency
/// threads; on this 2-core machine that is the whole cooperative pool, so
/// no `await` in the test process makes progress until the child exits.
/// Whatever the parent must do during the child's life (look up the
/// child's port, send to it, kill it, time its death) therefore runs on a
/// thread of its own, started before the exit test, and the test collects
/// the result after the child has exited.
final class ParentSide<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `state` is Locked; the body runs once on its thread.
    private enum State {
        case running([CheckedContinuation<T, any Error>])
        case done(Result<T, any Error>)
    }

    private let state = Locked<State>(.running([]))
    private let finished = DispatchSemaphore(value: 0)

    /// Starts `body` on a new thread now.
    init(_ name: String = "rlkt-parent", _ body: @escaping @Sendable () throws -> T) {
        let job = IPCThreadJob { [self] in
            setCurrentThreadName(name)
            complete(Result { try body() })
        }
        var handle = pthread_t()
        let context = Unmanaged.passRetained(job).toOpaque()
        let rc = pthread_create(&handle, nil, { context in
            Unmanaged<IPCThreadJob>.fromOpaque(context!).takeRetainedValue().run()
            return nil
        }, context)
        if rc == 0 {
            pthread_detach(handle)
        } else {
            Unmanaged<IPCThreadJob>.fromOpaque(context).release()
            complete(.failure(TestFailure("pthread_create failed: \(rc)")))
        }
    }

    private func complete(_ result: Result<T, any Error>) {
        let waiters: [CheckedContinuation<T, any Error>] = state.withLock { state in
            guard case let .running(waiters) = state else { return [] }
            state = .done(result)
            return waiters
        }
        finished.signal()
        for waiter in waiters { waiter.resume(with: result) }
    }

    /// What the body returned or threw.
    func value() async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            let done: Result<T, any Error>? = state.withLock { state in
                switch state {
                case let .running(waiters):
                    state = .running(waiters + [continuation])
                    return nil
                case let .done(result):
                    return result
                }
            }
            if let done { continuation.resume(with: done) }
        }
    }

    /// What the body returned or threw, once it is done.
    var finishedResult: Result<T, any Error>? {
        state.withLock { state in
            if case let .done(result) = state { return result }
            return nil
        }
    }

    /// Blocks until the body is done (for a thread that is not a Swift
    /// concurrency thread); false after `timeout` seconds.
    func wait(timeout: Double = 60) -> Bool { finished.wait(timeout: .now() + timeout) == .success }
}

/// A Swift concurrency executor that runs its jobs on a `LoopThread`: async
/// code the parent runs while a child lives (an async `request`) does not
/// need the cooperative pool, which the exit test holds.
final class LoopThreadExecutor: TaskExecutor, @unchecked Sendable {
    // @unchecked Sendable: LoopThread is Sendable; nothing else is stored.
    let thread: LoopThread

    init(name: String) throws {
        thread = LoopThread(name: name)
        try thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        do {
            try thread.perform { job.runSynchronously(on: executor) }
        } catch {
            fatalError("LoopThreadExecutor \(thread.name): the thread refused a job: \(error)")
        }
    }

    /// Starts `body` as a task that runs on this executor's thread; the
    /// returned `ParentSide`-like handle gives its result.
    func start<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) -> AsyncParentSide<T> {
        let handle = AsyncParentSide<T>()
        Task(executorPreference: self) {
            do { handle.complete(.success(try await body())) } catch { handle.complete(.failure(error)) }
        }
        return handle
    }

    func stop() { thread.stopAfterDraining() }
}

/// The result of async work started on a `LoopThreadExecutor`.
final class AsyncParentSide<T: Sendable>: @unchecked Sendable {
    // @unchecked Sendable: `result` is Locked.
    private let result = Locked<Result<T, any Error>?>(nil)
    private let finished = DispatchSemaphore(value: 0)

    func complete(_ outcome: Result<T, any Error>) {
        result.value = outcome
        finished.signal()
    }

    /// Blocks until the work is done (safety net: `timeout`); nil if it is not.
    func wait(timeout: Double = 60) -> Result<T, any Error>? {
        guard finished.wait(timeout: .now() + timeout) == .success else { return nil }
        return result.value
    }
}

// MARK: - Waiting for counts

/// A counter that threads can wait on: a `CondLocked` count, with the
/// waits the cross-process tests need.
final class IPCCounter: Sendable {
    private let count = CondLocked(0)

    func add(_ amount: Int = 1) { count.update { $0 += amount } }

    var current: Int { count.value }

    /// `wait(atLeast:timeout:)` on a thread of its own, for async tests: a
    /// blocked Swift concurrency thread would hold up the tests running in
    /// parallel (there are as many as cores).
    func arrival(atLeast target: Int, timeout: Double = 30) async -> Bool {
        (try? await PortProcess.onThread("rlkt-wait") { self.wait(atLeast: target, timeout: timeout) }) ?? false
    }

    /// Waits until the count is at least `target`, or until it has not
    /// changed for `idle` seconds (what was in flight has arrived by then),
    /// on a thread of its own. True if it got there.
    func arrivalWhileProgressing(atLeast target: Int, idle: Double = 3) async -> Bool {
        let counter = self
        return (try? await PortProcess.onThread("rlkt-wait") { () -> Bool in
            var last = counter.current
            while !counter.wait(atLeast: target, timeout: idle) {
                let now = counter.current
                if now == last { return false }
                last = now
            }
            return true
        }) ?? false
    }

    /// Waits until the count is at least `target`, for `timeout` seconds at
    /// most (a safety net). True if it got there.
    func wait(atLeast target: Int, timeout: Double = 30) -> Bool {
        count.wait(timeout: timeout) { $0 >= target }
    }
}

// MARK: - A receiving port on a thread of its own

/// A local port receiving on a `LoopThread` of its own, which keeps every
/// message (unless told not to) and counts them. The optional `handler` runs
/// first, on the loop thread, so that once `wait(forCount:)` sees a message,
/// what the handler did for it is done.
final class IPCInbox: Sendable {
    let port: Port
    let thread: LoopThread
    private let received = Locked<[PortMessage]>([])
    private let counter = IPCCounter()

    init(
        _ label: String, transport: Port.Transport = .ipc, keepMessages: Bool = true,
        handler: (@Sendable (PortMessage) -> Void)? = nil
    ) throws {
        thread = LoopThread(name: label)
        try thread.start()
        port = try Port(transport: transport)
        let received = self.received
        let counter = self.counter
        port.setMessageHandler { message in
            handler?(message)
            if keepMessages { received.withLock { $0.append(message) } }
            counter.add()
        }
        guard let loop = thread.runLoop else { throw TestFailure("LoopThread \(label) has no loop") }
        try port.schedule(in: loop, forMode: .default)
    }

    var messages: [PortMessage] { received.value }
    var count: Int { counter.current }

    /// Blocks until `count` messages have arrived (`timeout` is a safety net).
    @discardableResult
    func wait(forCount count: Int, timeout: Double = 30) -> Bool { counter.wait(atLeast: count, timeout: timeout) }

    /// Awaits `count` messages, or until none has arrived for `idle` seconds.
    func arrivalWhileProgressing(ofCount count: Int, idle: Double = 3) async -> Bool {
        await counter.arrivalWhileProgressing(atLeast: count, idle: idle)
    }

    /// Awaits `count` messages without blocking a Swift concurrency thread.
    func arrival(ofCount count: Int, timeout: Double = 30) async -> Bool {
        await counter.arrival(atLeast: count, timeout: timeout)
    }

    /// Invalidates the port (releasing its names) and stops the thread.
    func close() {
        port.invalidate()
        thread.stop()
    }
}

/// Checks that messages from each sender arrive in order, each once: sender
/// `s` numbers its messages 0, 1, 2, ...
final class SequenceChecker: Sendable {
    private struct State {
        var next: [Int]
        var problems: [String] = []
        var total = 0
    }

    private let state: Locked<State>

    init(senders: Int) { state = Locked(State(next: Array(repeating: 0, count: senders))) }

    /// Records message `sequence` of `sender`.
    func record(sender: Int, sequence: Int) {
        state.withLock { state in
            state.total += 1
            guard sender >= 0 && sender < state.next.count else {
                if state.problems.count < 10 { state.problems.append("message from unknown sender \(sender)") }
                return
            }
            if sequence != state.next[sender], state.problems.count < 10 {
                state.problems.append("sender \(sender): got \(sequence), expected \(state.next[sender])")
            }
            state.next[sender] = max(state.next[sender], sequence + 1)
        }
    }

    func problem(_ text: String) { state.withLock { if $0.problems.count < 10 { $0.problems.append(text) } } }

    var problems: [String] { state.withLock { $0.problems } }
    var total: Int { state.withLock { $0.total } }
    /// The next number expected from each sender: how many arrived in order.
    var next: [Int] { state.withLock { $0.next } }
}

// MARK: - The child's side

/// What a child process uses to tell its parent how it went: `FAIL:` lines
/// and `REPORT key=value` lines on standard error (unbuffered).
enum PortChild {
    /// Runs the child's part. An error it throws becomes a FAIL line; the
    /// last line says it finished.
    static func run(_ body: () async throws -> Void) async {
        armWatchdog()
        do {
            try await body()
        } catch {
            fail("threw \(error)")
        }
        report("finished", 1)
    }

    /// The longest a child may run: a child that hangs ends with a FAIL
    /// line and exit status 3 instead of hanging its test (the test runner
    /// waits for an exit test without a limit).
    static let watchdogSeconds: UInt32 = 600

    /// Arms SIGALRM for `watchdogSeconds`; its handler does only what is
    /// safe in a signal handler (write and _exit).
    static func armWatchdog() {
        signal(SIGALRM) { _ in
            let text: StaticString = "FAIL: the child did not finish within its watchdog's 600 s (PortChild.watchdogSeconds)\n"
            _ = Glibc.write(2, text.utf8Start, text.utf8CodeUnitCount)
            _exit(3)
        }
        alarm(watchdogSeconds)
    }

    static func check(
        _ condition: Bool, _ message: @autoclosure () -> String, fileID: String = #fileID, line: Int = #line
    ) {
        if !condition { fail("\(fileID):\(line): \(message())") }
    }

    static func fail(_ text: String) { write("FAIL: \(text.replacing("\n", with: " | "))\n") }

    static func report(_ key: String, _ value: Any) { write("REPORT \(key)=\(value)\n") }

    /// Makes this (child) process use `path` as its runtime directory.
    /// Call it before the process makes any port.
    static func useRuntimeDirectory(_ path: String) {
        setenv("RUNLOOPKIT_RUNTIME_DIR", path, 1)
    }

    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Glibc.write(2, $0.baseAddress! + offset, $0.count - offset) }
            if written <= 0 { break }
            offset += written
        }
    }
}

// MARK: - The parent's side

/// What a child process said, read by its parent.
struct ChildOutput: CustomStringConvertible {
    let standardError: String
    let failures: [String]
    let reports: [String: String]

    init(_ result: ExitTest.Result) {
        standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
        var failures: [String] = []
        var reports: [String: String] = [:]
        for line in standardError.split(separator: "\n") {
            if line.hasPrefix("FAIL: ") {
                failures.append(String(line.dropFirst(6)))
            } else if line.hasPrefix("REPORT ") {
                let field = line.dropFirst(7)
                if let equals = field.firstIndex(of: "=") {
                    reports[String(field[..<equals])] = String(field[field.index(after: equals)...])
                }
            }
        }
        self.failures = failures
        self.reports = reports
    }

    var description: String { "child's standard error:\n\(standardError)" }
    var comment: Comment { Comment(rawValue: description) }

    /// Records an issue for every check that failed in the child, and one if
    /// the child did not run to its end (when it should have).
    func expectSuccess(finished: Bool = true, sourceLocation: SourceLocation = #_sourceLocation) {
        for failure in failures {
            Issue.record(Comment(rawValue: "in the child: \(failure)"), sourceLocation: sourceLocation)
        }
        if finished && reports["finished"] != "1" {
            Issue.record(Comment(rawValue: "the child did not finish. \(description)"), sourceLocation: sourceLocation)
        }
    }

    func integer(_ key: String) -> Int? { reports[key].flatMap { Int($0) } }
    func unsigned(_ key: String) -> UInt64? { reports[key].flatMap { UInt64($0) } }
}
