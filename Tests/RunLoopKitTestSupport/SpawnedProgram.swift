// Running this package's built programs (portsniff, the examples, the
// main-loop checks) and any other program as child processes, their output
// going to files that a test reads.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A program of this package run as a child process, its output going to files.
package final class SpawnedProgram: Sendable {
    package let pid: pid_t
    package let outputPath: String
    package let errorPath: String
    /// The exit status once reaped. A signal is sent only under this lock
    /// with the status still nil, and the reaper reaps under it: so a pid is
    /// never signalled after it was reaped (it may be another process's by
    /// then).
    private let status = Locked<Int32?>(nil)
    /// Left once the program was reaped.
    private let ended = DispatchGroup()

    /// The directory `swift build` put this package's programs in: the test
    /// runner's own.
    package static var productsDirectory: String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        let path = count > 0 ? String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        return String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
    }

    package static func isBuilt(_ name: String) -> Bool { access(productsDirectory + "/" + name, X_OK) == 0 }

    /// Starts `name` from the products directory with `arguments` and extra
    /// environment variables.
    package convenience init(_ name: String, _ arguments: [String], environment extra: [String: String] = [:], in directory: String) throws {
        try self.init(path: Self.productsDirectory + "/" + name, arguments, environment: extra, in: directory)
    }

    /// Starts the program at `path` (any program, not only this package's).
    package init(path: String, _ arguments: [String], environment extra: [String: String] = [:], in directory: String) throws {
        let name = String(path[path.index(after: path.lastIndex(of: "/") ?? path.startIndex)...])
        outputPath = directory + "/\(name)-\(UInt32.random(in: 0...UInt32.max)).out"
        errorPath = outputPath + ".err"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_addopen(&actions, 2, errorPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        var environment: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            if !extra.keys.contains(where: { text.hasPrefix($0 + "=") }) { environment.append(text) }
            index += 1
        }
        environment += extra.map { "\($0.key)=\($0.value)" }
        // A program that crashes (or is refused, as a second server for a
        // name is) ends at once, without a backtracer that outlives it.
        if extra["SWIFT_BACKTRACE"] == nil { environment.append("SWIFT_BACKTRACE=enable=no") }
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup($0) } + [nil]
        defer { (argv + envp).forEach { free($0) } }
        // As from a shell: no signal blocked or ignored. The spawning
        // thread may be one of Dispatch's, which block every signal, and a
        // child inherits the mask (portsniff would never see its Ctrl-C).
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGQUIT] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        var child: pid_t = 0
        let rc = posix_spawn(&child, path, &actions, &attributes, argv, envp)
        guard rc == 0 else { throw PortError.systemCall(SystemCallError(call: "posix_spawn(\(path))", errno: rc)) }
        pid = child
        ended.enter()
        try startReaper()
    }

    /// Reaps the program the moment it ends, on a thread of its own. The
    /// test runner watches every child of the test process for its exit
    /// tests (`waitid(P_ALL)`, which reports the oldest ended child first):
    /// a program left a zombie, by a test that reaps it only later or
    /// never, would keep every exit test from being seen to end, and a test
    /// that waits for an exit test while holding such a zombie would wait
    /// forever.
    private func startReaper() throws {
        let context = Unmanaged.passRetained(self).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { context in
            let program = Unmanaged<SpawnedProgram>.fromOpaque(context!).takeRetainedValue()
            setCurrentThreadName("rlkt-reaper")
            program.reapWhenEnded()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<SpawnedProgram>.fromOpaque(context).release()
            kill(pid, SIGKILL)
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
            ended.leave()  // a group deallocated while entered traps
            throw TestFailure("pthread_create for the reaper of \(outputPath) failed: \(rc)")
        }
        pthread_detach(thread)
    }

    private func reapWhenEnded() {
        // Waits without reaping, so that the pid stays this program's
        // until the lock below is held.
        var info = siginfo_t()
        while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) == -1 && errno == EINTR {}
        status.withLock { status in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
            status = raw & 0x7f == 0 ? (raw >> 8) & 0xff : 128 + (raw & 0x7f)
        }
        ended.leave()
    }

    /// The exit status, waiting at most `timeout` seconds; nil if it had not
    /// exited by then (it is killed).
    package func waitForExit(timeout: Double = 60) -> Int32? {
        guard ended.wait(timeout: .now() + timeout) == .timedOut else { return status.withLock { $0 } }
        killAndReap()
        return nil
    }

    /// Kills the program (a stopped one too) and returns once it is reaped.
    package func killAndReap() {
        status.withLock { status in
            guard status == nil else { return }
            kill(pid, SIGKILL)
            kill(pid, SIGCONT)  // a stopped program dies too
        }
        ended.wait()
    }

    package var output: String { Self.read(outputPath) }
    package var errorOutput: String { Self.read(errorPath) }

    package static func read(_ path: String) -> String {
        guard let file = fopen(path, "r") else { return "" }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// A fresh private directory (mode 0700) for one test's files, endpoints
/// and programs' output, under /tmp.
package func makeTemporaryDirectory(_ label: String = "rlk-tap") -> String {
    var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
}
