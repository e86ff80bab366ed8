import CBenchPeers
import Glibc
import RunLoopKit

/// Which CPU each side of a two-thread measurement runs on.
///
/// On this VM a wake-up across vCPUs costs several times one on the same
/// vCPU (an inter-processor interrupt: a cross-core round trip takes tens of
/// µs, a same-core one under ten), and where the scheduler puts two threads
/// changes from one run to the next. Left alone, a comparison measures that
/// luck; so both sides of every comparison run with the same placement:
/// by default the side that starts (the pinger, the sender) on CPU 0 and
/// the other (the echo, the receiver, a child process) on CPU 1, which is
/// "two threads on two cores", the case docs/design.md ("Performance") describes.
/// `--placement same` puts both on CPU 0; `--placement free` pins nothing.
struct Placement: Sendable, CustomStringConvertible {
    enum Mode: String, Sendable { case cross, same, free }

    let mode: Mode
    /// CPU of the starting side, -1 for none.
    let first: Int32
    /// CPU of the other side, -1 for none.
    let second: Int32

    init(_ mode: Mode) {
        let cpus = Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))
        // With one CPU there is nothing to choose.
        let effective = cpus < 2 && mode == .cross ? .free : mode
        self.mode = effective
        switch effective {
        case .cross: (first, second) = (0, 1)
        case .same: (first, second) = (0, 0)
        case .free: (first, second) = (-1, -1)
        }
    }

    var description: String {
        switch mode {
        case .cross: "the starting thread on CPU 0, the other side on CPU 1"
        case .same: "both threads on CPU 0"
        case .free: "threads wherever the scheduler puts them"
        }
    }

    /// Pins thread `tid` (0: the calling thread) to `cpu` (-1: leave it alone).
    static func pin(_ tid: Int32, to cpu: Int32) {
        _ = bench_pin_thread(tid, cpu)
    }

    /// A started LoopThread named `name`, pinned to `cpu`: how every
    /// scenario makes the thread on the far side of a measurement.
    static func startedLoopThread(_ name: String, on cpu: Int32) throws -> LoopThread {
        let thread = LoopThread(name: name)
        try thread.start()
        if let tid = thread.threadID { pin(tid, to: cpu) }
        return thread
    }

    /// Runs `body` with every thread of the process pinned to `cpu`, then
    /// lets them all run anywhere again; `cpu` -1 pins nothing. For a side
    /// that runs on a pool's threads (Dispatch's, Swift's default
    /// executor's), which no handle reaches: pinned one by one through
    /// /proc/self/task, and a thread a pool makes meanwhile inherits the
    /// pin from the thread that makes it. Left free, such a side ran on
    /// either CPU from one batch to the next, and in `--placement same` its
    /// median moved by half between runs (docs/performance.md, "Pools
    /// placed too").
    static func whileEveryThreadPinned<T>(to cpu: Int32, _ body: () throws -> T) rethrows -> T {
        guard cpu >= 0 else { return try body() }
        for tid in processThreads() { pin(tid, to: cpu) }
        defer { for tid in processThreads() { _ = bench_unpin_thread(tid) } }
        return try body()
    }

    /// Where a side that runs on a pool's threads is placed: with both
    /// sides on one CPU (`same`), every thread of the process there; else
    /// only the thread that starts it (`first`), the pool left free, as
    /// a pool is in use.
    func whilePoolPlaced<T>(_ body: () throws -> T) rethrows -> T {
        mode == .same ? try Self.whileEveryThreadPinned(to: first, body) : try Self.whilePinned(to: first, body)
    }

    /// The ids of the process's threads now.
    private static func processThreads() -> [Int32] {
        guard let directory = opendir("/proc/self/task") else { return [] }
        defer { closedir(directory) }
        var tids: [Int32] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            if let tid = Int32(name) { tids.append(tid) }
        }
        return tids
    }

    /// Runs `body` with the calling thread pinned to `cpu`, then lets it run anywhere again.
    static func whilePinned<T>(to cpu: Int32, _ body: () throws -> T) rethrows -> T {
        guard cpu >= 0 else { return try body() }
        pin(0, to: cpu)
        defer { _ = bench_unpin_thread(0) }
        return try body()
    }
}
