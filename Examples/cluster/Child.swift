import Dispatch
import Glibc
import Synchronization

/// A program this one started (posix_spawn), its standard output read
/// through a pipe: passed on to this process's as it comes, and kept, so
/// that the caller can wait for a line.
final class Child: Sendable {
    let pid: pid_t
    private let output = Mutex("")
    private let ended = DispatchSemaphore(value: 0)

    /// Starts `path` with `arguments` and exactly `environment`.
    init(_ path: String, _ arguments: [String], environment: [String: String], forward: Bool = true) throws {
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw ClusterError("pipe: errno \(errno)") }
        // Neither end leaks into other children (the write end would keep their reader from its end of file).
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        let argv: [UnsafeMutablePointer<CChar>?] = ([path] + arguments).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var child: pid_t = 0
        let status = posix_spawn(&child, path, &actions, nil, argv, envp)
        close(pipeEnds[1])
        guard status == 0 else {
            close(pipeEnds[0])
            throw ClusterError("cannot start \(path): errno \(status)")
        }
        pid = child
        let readEnd = pipeEnds[0]
        DispatchQueue.global().async { [self] in
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = read(readEnd, &buffer, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { break }
                if forward { _ = buffer.withUnsafeBytes { write(1, $0.baseAddress, count) } }
                let text = String(decoding: buffer[..<count], as: UTF8.self)
                output.withLock { $0 += text }
            }
            close(readEnd)
            ended.signal()
        }
    }

    /// What it wrote so far.
    var text: String { output.withLock { $0 } }

    /// Waits until it wrote `line` (a whole line), at most `seconds`.
    func waitForLine(_ line: String, seconds: Double) -> Bool {
        let deadline = DispatchTime.now() + seconds
        while DispatchTime.now() < deadline {
            if text.split(separator: "\n").contains(where: { $0 == line }) { return true }
            usleep(20_000)
        }
        return false
    }

    /// Waits for its end (its output read to the end): its exit status,
    /// or 128 + the signal that ended it.
    @discardableResult
    func wait() -> Int32 {
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        ended.wait()
        ended.signal()
        let signal = raw & 0x7F
        return signal == 0 ? (raw >> 8) & 0xFF : 128 + signal
    }
}
