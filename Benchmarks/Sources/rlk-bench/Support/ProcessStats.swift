import CBenchPeers
import Glibc

/// What the process holds right now, read from /proc.
enum ProcessStats {
    /// Open file descriptors (the listing's own descriptor counts too, the
    /// same at both ends of a difference).
    static func openFileDescriptors() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while readdir(directory) != nil { count += 1 }
        return count - 2  // "." and ".."
    }

    /// Each open file descriptor and what it is (its /proc/self/fd link:
    /// a path, `socket:[inode]`, `anon_inode:[eventfd]`...), the listing's
    /// own descriptor left out.
    static func openFileDescriptorTargets() -> [Int32: String] {
        guard let directory = opendir("/proc/self/fd") else { return [:] }
        defer { closedir(directory) }
        let own = dirfd(directory)
        var targets: [Int32: String] = [:]
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            guard let fd = Int32(name), fd != own else { continue }
            var buffer = [CChar](repeating: 0, count: 256)
            let length = readlink("/proc/self/fd/\(name)", &buffer, buffer.count - 1)
            targets[fd] = length > 0 ? String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) : "?"
        }
        return targets
    }

    /// Resident set size in bytes (the second field of /proc/self/statm, in pages).
    static func residentBytes() -> Int {
        guard let text = readSmallFile("/proc/self/statm") else { return -1 }
        let fields = text.split(separator: " ")
        guard fields.count > 1, let pages = Int(fields[1]) else { return -1 }
        return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// CPU time of thread `tid` of this process, in nanoseconds, read without
    /// waking it; nil if the kernel will not say.
    static func threadCPUNanoseconds(_ tid: Int32) -> UInt64? {
        let value = bench_thread_cpu_ns(tid)
        return value == UInt64.max ? nil : value
    }

    /// Voluntary context switches of thread `tid`: every time it slept and was
    /// woken. An idle thread that never wakes keeps this constant.
    static func voluntarySwitches(_ tid: Int32) -> Int64? {
        let value = bench_thread_voluntary_switches(tid)
        return value < 0 ? nil : value
    }

    /// The soft fd limit after raising it to the hard one.
    static func raiseFileDescriptorLimit() -> Int { Int(bench_raise_fd_limit()) }

    static func readSmallFile(_ path: String) -> String? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
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
}
