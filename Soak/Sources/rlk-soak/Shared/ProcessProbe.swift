import Glibc

/// What the leak checks read of the calling process: its open file
/// descriptors and its resident set.
enum ProcessProbe {
    /// Entries of /proc/self/fd, less the one the listing itself opens.
    static func openDescriptorCount() -> Int {
        guard let directory = opendir("/proc/self/fd") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in name[0] == UInt8(ascii: ".") }
            if !isDot { count += 1 }
        }
        return count - 1
    }

    /// The resident set in bytes: the second field of /proc/self/statm, in pages.
    static func residentBytes() -> Int {
        guard let file = fopen("/proc/self/statm", "r") else { return -1 }
        defer { fclose(file) }
        var line = [CChar](repeating: 0, count: 256)
        guard fgets(&line, Int32(line.count), file) != nil else { return -1 }
        let text = String(decoding: line.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let fields = text.split(separator: " ").compactMap { Int($0) }
        guard fields.count >= 2 else { return -1 }
        return fields[1] * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    /// Waits until the descriptor count has stayed the same for `steadyFor`
    /// (libzmq closes the sockets of a dropped connection on its own I/O
    /// thread, a moment after the port that used it is gone), at most
    /// `limit`. A measurement, not a synchronisation: if the count never
    /// settles, the last one is what is reported.
    static func settledSample(steadyFor: Double = 0.5, limit: Double = 10) -> ResourceSample {
        let start = MonotonicTime.now()
        var last = openDescriptorCount()
        var steadySince = start
        while true {
            let now = MonotonicTime.now()
            if now - steadySince >= MonotonicTime.nanoseconds(steadyFor) || now - start >= MonotonicTime.nanoseconds(limit) {
                break
            }
            usleep(50_000)
            let count = openDescriptorCount()
            if count != last {
                last = count
                steadySince = MonotonicTime.now()
            }
        }
        return ResourceSample(openDescriptors: last, residentBytes: residentBytes())
    }
}
