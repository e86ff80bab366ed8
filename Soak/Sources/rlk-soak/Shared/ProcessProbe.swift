import CMallocInfo
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

    /// The open descriptors by kind (what each links to, with the socket
    /// and pipe inode numbers left out: "socket", "anon_inode:[eventfd]",
    /// a path), so that a change in the count says what changed.
    static func descriptorKinds() -> [String: Int] {
        guard let directory = opendir("/proc/self/fd") else { return [:] }
        defer { closedir(directory) }
        let own = dirfd(directory)
        var kinds: [String: Int] = [:]
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let number = Int32(name), number != own else { continue }
            var target = [CChar](repeating: 0, count: 4096)
            let length = readlink("/proc/self/fd/\(name)", &target, target.count - 1)
            guard length > 0 else { continue }
            var kind = String(decoding: target[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if let bracket = kind.firstIndex(of: ":"), kind.hasPrefix("socket") || kind.hasPrefix("pipe") {
                kind = String(kind[..<bracket])
            }
            // A name's lock file is one per name, whichever the name.
            if kind.hasSuffix(".lock"), let slash = kind.lastIndex(of: "/") { kind = kind[..<slash] + "/*.lock" }
            kinds[kind, default: 0] += 1
        }
        return kinds
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
        // Free pages the allocator still keeps go back first: the resident
        // set is then what the process holds, not what it once touched.
        malloc_trim(0)
        let heap = mallinfo2()
        return ResourceSample(openDescriptors: last, residentBytes: residentBytes(), heapInUseBytes: Int(heap.uordblks + heap.hblkhd),
                              descriptorKinds: descriptorKinds())
    }
}
