// The files a test leaves behind, for every test target that makes them:
// a tree removed without following symlinks, the entries of a directory.
// The port tests extend `PortProcess` with what meeting other processes
// takes (names, the runtime directory, messages, threads, errors).
import Glibc

/// Helpers for tests that run other processes, and the files they leave.
package enum PortProcess {
    /// Removes `path` and everything under it, without following symlinks.
    package static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if info.st_mode & S_IFMT == S_IFDIR {
            // A directory made unreadable or given away by a test: take it back first.
            _ = chown(path, getuid(), getgid())
            _ = chmod(path, 0o700)
            for entry in directoryEntries(path) { removeTree(path + "/" + entry) }
            rmdir(path)
        } else {
            unlink(path)
        }
    }

    /// The names in a directory, without "." and "..".
    package static func directoryEntries(_ path: String) -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            // In place: a copy of the whole d_name reads past a short last entry.
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }
}
