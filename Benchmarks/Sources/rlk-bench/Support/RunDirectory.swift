import CBenchPeers
import Glibc

/// The run's private directory (mode 0700, under /tmp): RunLoopKit's runtime
/// directory for this run (RUNLOOPKIT_RUNTIME_DIR, inherited by the
/// children) and the home of the raw libzmq ipc endpoints and the tap's
/// endpoint. It is removed with everything in it when rlk-bench exits, even
/// on Ctrl-C, so a run leaves no socket or lock files behind. A run killed
/// with SIGKILL cannot clean up; its directory carries its pid, and the next
/// run removes directories whose process is gone.
enum RunDirectory {
    nonisolated(unsafe) private static var made: String?  // set once, on the main thread, before any scenario

    static var path: String {
        guard let made else { preconditionFailure("RunDirectory.prepare() must run first") }
        return made
    }

    /// Makes the directory, points RunLoopKit at it, installs the clean-up.
    /// `sweepingDeadRuns`: first remove what killed runs left (the
    /// `--workload` mode skips it: its allocations grow with the entries
    /// in /tmp, which the valgrind scripts' differences must not see).
    static func prepare(sweepingDeadRuns: Bool = true) throws {
        bench_install_cleanup()
        if sweepingDeadRuns { sweepDirectoriesOfDeadRuns() }
        var template = Array("/tmp/rlk-bench-\(getpid())-XXXXXX".utf8CString)
        guard let result = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
            throw BenchError("mkdtemp failed: \(String(cString: strerror(errno)))")
        }
        let path = String(cString: result)
        made = path
        bench_set_cleanup_directory(path)
        setenv("RUNLOOPKIT_RUNTIME_DIR", path, 1)
        // The tcp scenarios' keys: made here for the run (both processes
        // share them, as one user's processes on one host do), never in
        // the user's own configuration directory.
        setenv("XDG_CONFIG_HOME", path, 1)
    }

    /// Removes `/tmp/rlk-bench-<pid>-*` directories of this user whose
    /// process no longer exists (with the files in them: sockets and locks).
    private static func sweepDirectoriesOfDeadRuns() {
        guard let tmp = opendir("/tmp") else { return }
        defer { closedir(tmp) }
        while let entry = readdir(tmp) {
            let name = Self.entryName(entry)
            let parts = name.split(separator: "-")
            guard name.hasPrefix("rlk-bench-"), parts.count == 4, let pid = pid_t(parts[2]) else { continue }
            guard kill(pid, 0) != 0 && errno == ESRCH else { continue }
            let path = "/tmp/" + name
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR, info.st_uid == getuid() else { continue }
            if let directory = opendir(path) {
                while let file = readdir(directory) {
                    let fileName = Self.entryName(file)
                    if fileName != "." && fileName != ".." { unlink(path + "/" + fileName) }
                }
                closedir(directory)
            }
            rmdir(path)
        }
    }

    /// An `ipc://` endpoint in the directory.
    static func ipcEndpoint(_ name: String) -> String { "ipc://\(path)/\(name)" }

    /// A directory entry's name, read where it lies: copying the whole
    /// 256-byte `d_name` reads past a short entry at the end of readdir's
    /// buffer (AddressSanitizer's heap-buffer-overflow).
    static func entryName(_ entry: UnsafeMutablePointer<dirent>) -> String {
        withUnsafePointer(to: &entry.pointee.d_name) {
            $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
        }
    }
}
