import Glibc
import RunLoopKit

/// The names the live view shows for processes: from the tapped processes'
/// count files (`PortTapCounts`, which stay ten minutes after a process
/// died, so a recording replayed soon after still gets them), else from
/// `/proc/<pid>/comm` while the process lives, else "?".
final class ProcessNames {
    private var names: [Int32: String] = [:]
    /// When the count files were last read: at most once a second.
    private var countsReadAt: Int64 = 0

    func name(of pid: Int32) -> String {
        if let known = names[pid] { return known }
        let now = MonotonicNow.nanoseconds()
        if now - countsReadAt > 1_000_000_000 {
            countsReadAt = now
            for counts in (try? PortTap.processCounts()) ?? [] where names[counts.pid] == nil { names[counts.pid] = counts.name }
            if let known = names[pid] { return known }
        }
        guard let file = fopen("/proc/\(pid)/comm", "r") else { return "?" }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "?" }
        let name = String(decoding: buffer.prefix { $0 != 0 && $0 != 10 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        names[pid] = name
        return name
    }
}
