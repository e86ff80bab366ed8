import CBenchPeers
import Glibc

/// A copy of rlk-bench started in a hidden role (`--child <role> ...`) to be
/// the other process of an ipc scenario.
///
/// Children never outlive the run: each is tracked by the C clean-up code
/// (killed and reaped on exit and on SIGINT/SIGTERM), asks the kernel to
/// kill it when its parent dies (PR_SET_PDEATHSIG), and gives up by itself
/// when it sees no traffic for a while. `finish` reaps it, killing it if it
/// does not exit in time.
final class ChildProcess {
    let pid: pid_t
    let role: String
    private var reaped = false

    /// The read end of the child's stdout, when captured.
    private var output: Int32 = -1

    /// Starts `/proc/self/exe --child <role> <parent pid> <cpu> <arguments...>`;
    /// the child pins itself (every thread it makes) to `cpu` unless it is -1.
    /// With `captureOutput`, the child's stdout is a pipe that `readOutput` reads.
    init(role: String, cpu: Int32 = -1, arguments: [String], captureOutput: Bool = false) throws {
        // RLK_BENCH_EXE names this program when /proc/self/exe does not:
        // under valgrind it is valgrind's (Benchmarks/README.md, "Counting
        // instructions and allocations (valgrind)": by hand).
        let executable = getenv("RLK_BENCH_EXE").map { String(cString: $0) } ?? "/proc/self/exe"
        var argv = [executable, "--child", role, String(getpid()), String(cpu)] + arguments
        var program = executable
        // The receiving side of the ipc and tcp rows, profiled where it runs
        // (Benchmarks/README.md, "Counting instructions and allocations
        // (valgrind)": by hand).
        if let directory = getenv("RLK_BENCH_CHILD_CALLGRIND"), role == "rlk-peer" {
            var path = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            guard readlink("/proc/self/exe", &path, Int(PATH_MAX)) > 0 else { throw BenchError("readlink /proc/self/exe failed") }
            argv[0] = String(cString: path)
            argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=\(String(cString: directory))/callgrind.out.%p"] + argv
            program = "/usr/bin/valgrind"
        }
        var cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { for pointer in cArguments { free(pointer) } }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var pipeEnds: [Int32] = [-1, -1]
        if captureOutput {
            guard pipe(&pipeEnds) == 0 else { throw BenchError("pipe failed: \(String(cString: strerror(errno)))") }
            for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
            // dup2 clears close-on-exec on the child's fd 1; both original ends close at exec.
            posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        }
        var child: pid_t = 0
        let rc = posix_spawn(&child, program, &actions, nil, &cArguments, environ)
        if captureOutput { close(pipeEnds[1]) }
        guard rc == 0 else {
            if captureOutput { close(pipeEnds[0]) }
            throw BenchError("posix_spawn of the \(role) child failed: \(String(cString: strerror(rc)))")
        }
        pid = child
        self.role = role
        output = pipeEnds[0]
        bench_track_child(child)
    }

    /// Everything the child writes to stdout until it closes it (exits), or
    /// until `seconds` pass.
    func readOutput(within seconds: Double) throws -> String {
        guard output >= 0 else { throw BenchError("the \(role) child's output is not captured") }
        defer {
            close(output)
            output = -1
        }
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let now = monotonicNanoseconds()
            guard now < deadline else { throw BenchError("the \(role) child did not finish within \(seconds) s") }
            var descriptor = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32((deadline - now) / 1_000_000 + 1))
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { continue }
            let count = buffer.withUnsafeMutableBytes { read(output, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The next line the child writes to stdout (without its newline),
    /// waiting up to `seconds`: how a child says it is ready. Reads a byte
    /// at a time, so that nothing after the line is taken from the pipe.
    func readLine(within seconds: Double) throws -> String {
        guard output >= 0 else { throw BenchError("the \(role) child's output is not captured") }
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        var bytes: [UInt8] = []
        while true {
            let now = monotonicNanoseconds()
            guard now < deadline else { throw BenchError("the \(role) child wrote no line within \(seconds) s") }
            var descriptor = pollfd(fd: output, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, Int32((deadline - now) / 1_000_000 + 1))
            if ready <= 0 { continue }
            var byte: UInt8 = 0
            let count = read(output, &byte, 1)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { throw BenchError("the \(role) child closed its output before a line (it exited?)") }
            if byte == UInt8(ascii: "\n") { return String(decoding: bytes, as: UTF8.self) }
            bytes.append(byte)
        }
    }

    /// Waits up to `seconds` for the child to exit, then kills it; always
    /// reaps it. Returns a description of how it ended.
    @discardableResult
    func finish(within seconds: Double) -> String {
        guard !reaped else { return "already reaped" }
        defer {
            reaped = true
            bench_untrack_child(pid)
        }
        let deadline = monotonicNanoseconds() + UInt64(seconds * 1e9)
        var status: Int32 = 0
        while true {
            let rc = waitpid(pid, &status, WNOHANG)
            if rc == pid { return Self.describe(status) }
            if rc < 0 && errno != EINTR { return "waitpid failed: \(String(cString: strerror(errno)))" }
            if monotonicNanoseconds() >= deadline { break }
            usleep(5_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        return "killed after \(seconds) s (" + Self.describe(status) + ")"
    }

    deinit {
        if output >= 0 { close(output) }
        if !reaped { finish(within: 0) }
    }

    private static func describe(_ status: Int32) -> String {
        let signal = status & 0x7f
        return signal == 0 ? "exited with status \((status >> 8) & 0xff)" : "killed by signal \(signal)"
    }
}
