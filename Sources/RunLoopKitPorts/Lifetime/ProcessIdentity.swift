import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The identity of a process: its pid and its start time in clock ticks
/// since boot (field 22 of /proc/<pid>/stat).
struct ProcessIdentity: Hashable, Sendable {
    let pid: Int32
    let startTime: UInt64

    static let current = ProcessIdentity(pid: getpid(), startTime: startTime(of: getpid()) ?? 0)

    /// Whether the process is still the one that was identified (a reused
    /// pid has another start time).
    var isAlive: Bool {
        guard kill(pid, 0) == 0 || errno == EPERM else { return false }
        return Self.startTime(of: pid) == startTime
    }

    /// Alive and not a zombie: a process that has exited but that its
    /// parent has not reaped yet still has its pid and start time, yet its
    /// sockets are gone. For telling a dead peer from a port closed by a live
    /// one (`Port.destinationError`).
    var isRunning: Bool {
        guard isAlive, let state = Self.statFields(of: pid)?.first else { return false }
        return !state.elementsEqual("Z".utf8) && !state.elementsEqual("X".utf8)
    }

    static func startTime(of pid: Int32) -> UInt64? {
        // fields[0] is field 3 (state); starttime is field 22.
        guard let fields = statFields(of: pid), fields.count > 19 else { return nil }
        return UInt64(String(decoding: fields[19], as: UTF8.self))
    }

    /// The fields of /proc/<pid>/stat from the third (the state) on: "pid
    /// (comm) state ppid ...", where comm may hold spaces and parentheses,
    /// so fields are counted after the last ')'.
    private static func statFields(of pid: Int32) -> [ArraySlice<UInt8>]? {
        let fd = open("/proc/\(pid)/stat", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 1024)
        let count = read(fd, &buffer, buffer.count)
        guard count > 0, let close = buffer[..<count].lastIndex(of: UInt8(ascii: ")")) else { return nil }
        return buffer[(close + 1)..<count].split(separator: UInt8(ascii: " "))
    }
}
