import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The per-user directory where ipc ports live and port names are
/// registered (docs/design.md, "Ports and transports"): `$RUNLOOPKIT_RUNTIME_DIR` if set (tests use it),
/// else `$XDG_RUNTIME_DIR/runloopkit`, else `/tmp/runloopkit-<uid>`. It is
/// made with mode 0700 and refused if it is a symlink, belongs to another
/// user, or is open to others.
enum RuntimeDirectory {
    static func path() throws(PortError) -> String {
        let path: String
        if let explicit = environment("RUNLOOPKIT_RUNTIME_DIR") {
            path = explicit
        } else if let xdg = environment("XDG_RUNTIME_DIR") {
            path = xdg + "/runloopkit"
        } else {
            path = "/tmp/runloopkit-\(getuid())"
        }
        let identity = try ensure(path)
        if seen.withLock({ $0.updateValue(identity, forKey: path) }) != identity {
            // First use, or the directory was replaced under this live
            // process (removed and made again): the host's id must survive.
            HostIdentity.reconcile(in: path)
        }
        sweepOnce(path)
        return path
    }

    /// The directory (device and inode) each path named when last used.
    private static let seen = Locked<[String: FileIdentity]>([:])

    /// The directories this process has swept.
    private static let swept = Locked<Set<String>>([])

    /// Once per process and directory, on its first use: `sweep(_:)`.
    private static func sweepOnce(_ path: String) {
        guard swept.withLock({ $0.insert(path).inserted }) else { return }
        sweep(path)
    }

    /// Removes what dead processes left in the directory, and nothing else
    /// (docs/ports.md, "What stays in the runtime directory"):
    /// - the anonymous socket files (`p<pid>-<n>.sock`) of processes that no
    ///   longer exist, which exited without closing their ports;
    /// - the files of names nobody holds (`<name>.lock` and `<name>.port`),
    ///   each removed while holding the name's lock and only if the path
    ///   still names the file locked, so that a registration running at the
    ///   same moment is never undone (`NameLock.removeIfStale`); a name
    ///   whose holder died stays, marked, until its mark is ten minutes old
    ///   (`DeadHolderMark`), so that lookups can say `.nameHolderDied`.
    /// Other files (the host's id, the sniffer's) are left alone.
    static func sweep(_ path: String) {
        guard let directory = opendir(path) else { return }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            // Read where it lies: copying the whole 256-byte d_name reads past
            // a short entry at the end of readdir's buffer (AddressSanitizer's
            // heap-buffer-overflow, docs/contributing.md).
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if name.hasSuffix(".lock") {
                let base = name.dropLast(".lock".count)
                guard (try? PortNameServer.validate(String(base))) != nil else { continue }
                NameLock.removeIfStale(lockPath: "\(path)/\(name)", socketPath: "\(path)/\(base).port")
                continue
            }
            guard name.hasPrefix("p"), name.hasSuffix(".sock"),
                  let dash = name.firstIndex(of: "-"),
                  let pid = Int32(name[name.index(after: name.startIndex)..<dash]) else { continue }
            if kill(pid, 0) != 0 && errno == ESRCH { unlink(path + "/" + name) }
        }
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }

    /// Makes the directory if need be and checks it is safe; returns what
    /// it is (to notice a replacement).
    private static func ensure(_ path: String) throws(PortError) -> FileIdentity {
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .runtimeDirectoryUnsafe(path: path, reason: "mkdir failed: \(String(cString: strerror(errno)))")
        }
        var info = stat()
        guard lstat(path, &info) == 0 else {
            throw .runtimeDirectoryUnsafe(path: path, reason: "lstat failed: \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw .runtimeDirectoryUnsafe(path: path, reason: "not a directory (a symlink or file is in the way)")
        }
        guard info.st_uid == getuid() else {
            throw .runtimeDirectoryUnsafe(path: path, reason: "owned by uid \(info.st_uid), not by this user (\(getuid()))")
        }
        if info.st_mode & 0o077 != 0 && chmod(path, 0o700) != 0 {
            throw .runtimeDirectoryUnsafe(path: path, reason: "mode \(String(info.st_mode & 0o777, radix: 8)) is open to others and chmod failed")
        }
        return FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
    }
}
