import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A tapped process's running account, in a small file of its own that any
/// sniffer can read (S-TAP-1): how many events the process has produced and
/// how many have left its tap (passed on or dropped), so that a sniffer
/// knows what it is owed without waiting for a later event: events missed
/// after the last one it got, a process it never heard from, a process that
/// exited while the sniffer was stopped.
///
/// The tap's thread rewrites the file (a new file renamed over the old, so
/// a reader never sees half of one) at most every 100 ms while events flow,
/// and once more when the process exits; a sender never waits on it. The
/// files live in `PortTap.countsDirectory()`, named `<pid>-<started>.json`;
/// a dead process's file stays there for `PortTapCounts.keptAfterExit`
/// (ten minutes), so that a sniffer that resumes late still finds it, and
/// is then removed by the next tap that starts.
public struct PortTapCounts: Codable, Sendable, Hashable {
    /// The format's version: 1.
    public var version: Int
    /// The process.
    public var pid: Int32
    /// When it started, in clock ticks since boot (`PortTapEvent.started`).
    public var started: UInt64
    /// Its name: the basename of its argv[0] (`/proc/<pid>/cmdline`), as `ps` shows it.
    public var name: String
    /// Events numbered so far: the last event's `seq`.
    public var produced: UInt64
    /// Every event numbered up to this one has left the tap: passed on to
    /// the sniffers connected then, or dropped.
    public var settled: UInt64
    /// The process exited (the last update, written at exit).
    public var exited: Bool
    /// When this update was written, in nanoseconds since 1970.
    public var time: Int64

    /// How long a dead process's file stays before a tap removes it.
    public static let keptAfterExit: TimeInterval = 600

    /// Counts as the tap writes them.
    public init(pid: Int32, started: UInt64, name: String, produced: UInt64, settled: UInt64, exited: Bool, time: Int64) {
        version = 1
        self.pid = pid
        self.started = started
        self.name = name
        self.produced = produced
        self.settled = settled
        self.exited = exited
        self.time = time
    }
}

extension PortTap {
    /// The directory of the tapped processes' count files:
    /// `<runtime directory>/tap/counts`, made if need be.
    public static func countsDirectory() throws(PortError) -> String {
        let path = try TapFanOut.directoryPath() + "/counts"
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .runtimeDirectoryUnsafe(path: path, reason: "mkdir failed: \(String(cString: strerror(errno)))")
        }
        return path
    }

    /// Every tapped process's latest counts, from the counts directory;
    /// files that cannot be read (one being replaced) are skipped.
    public static func processCounts() throws(PortError) -> [PortTapCounts] {
        let directory = try countsDirectory()
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var all: [PortTapCounts] = []
        let decoder = JSONDecoder()
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            guard name.hasSuffix(".json"), let bytes = TapCountFile.read(directory + "/" + name),
                  let counts = try? decoder.decode(PortTapCounts.self, from: Data(bytes)) else { continue }
            all.append(counts)
        }
        return all
    }
}

/// Writes this process's `PortTapCounts` (on the tap's thread) and sweeps
/// the files of processes dead for longer than `keptAfterExit`.
final class TapCountFile: @unchecked Sendable {
    // @unchecked Sendable: used on the tap thread, and at exit under the
    // tap's drain lock.
    private let directory: String
    private let path: String
    private let name: String
    private let encoder = JSONEncoder()
    private var written: (produced: UInt64, settled: UInt64)?

    init(directory: String) {
        self.directory = directory
        let identity = ProcessIdentity.current
        name = Self.processName()
        path = directory + "/\(identity.pid)-\(identity.startTime).json"
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    }

    /// Writes the counts if they changed since the last write (or `exited`).
    func write(produced: UInt64, settled: UInt64, exited: Bool = false) {
        if !exited, let written, written == (produced, settled) { return }
        let identity = ProcessIdentity.current
        let counts = PortTapCounts(
            pid: identity.pid, started: identity.startTime, name: name, produced: produced, settled: settled,
            exited: exited, time: PortTap.now())
        guard let bytes = try? encoder.encode(counts) else { return }
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { return }
        let complete = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) } == bytes.count
        close(fd)
        if complete && rename(temporary, path) == 0 { written = (produced, settled) } else { unlink(temporary) }
    }

    /// Removes the files of processes that are gone (their pid is free, or
    /// taken by a process started later) and were last written more than
    /// `keptAfterExit` ago.
    func sweep() {
        guard let handle = opendir(directory) else { return }
        defer { closedir(handle) }
        let now = time(nil)
        while let entry = readdir(handle) {
            let file = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            guard file.hasSuffix(".json"), let dash = file.firstIndex(of: "-"),
                  let pid = Int32(file[..<dash]), let started = UInt64(file[file.index(after: dash)...].dropLast(".json".count))
            else { continue }
            if ProcessIdentity.startTime(of: pid) == started { continue }  // alive
            var info = stat()
            let full = directory + "/" + file
            if stat(full, &info) == 0 && Double(now - info.st_mtim.tv_sec) > PortTapCounts.keptAfterExit { unlink(full) }
        }
    }

    static func read(_ path: String) -> [UInt8]? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        return bytes
    }

    /// The process's name as `ps` shows it: the basename of its argv[0]
    /// (`/proc/self/cmdline`), not the kernel's `comm`, which is "exe" for a
    /// program started through `/proc/self/exe`; `comm` when argv[0] is empty.
    static func processName() -> String {
        name(cmdline: read("/proc/self/cmdline") ?? [], comm: read("/proc/self/comm") ?? [], executable: executablePath())
    }

    /// The basename of the first NUL-terminated string of `cmdline`; for an
    /// argv[0] that is `/proc/self/exe` (or `/proc/<pid>/exe`), the
    /// executable's own; `comm` when argv[0] is empty.
    static func name(cmdline: [UInt8], comm: [UInt8], executable: String?) -> String {
        let argv0 = String(decoding: cmdline.prefix { $0 != 0 }, as: UTF8.self)
        var base = argv0.split(separator: "/").last.map(String.init) ?? ""
        if argv0.hasPrefix("/proc/"), base == "exe", let executable,
           let own = executable.split(separator: "/").last {
            base = String(own)
        }
        if !base.isEmpty { return base }
        let fallback = String(decoding: comm, as: UTF8.self).trimmingCharacters(in: .newlines)
        return fallback.isEmpty ? "?" : fallback
    }

    /// Where this process's executable is (`/proc/self/exe`'s target).
    static func executablePath() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The kernel's name of this process (`/proc/self/comm`), which its main
    /// thread bears.
    static func kernelName() -> String {
        guard let bytes = read("/proc/self/comm") else { return "?" }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .newlines)
    }
}
