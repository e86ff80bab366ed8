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
/// "two threads on two cores" (docs/performance.md, "Placements").
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
        let thread = LoopThread(name: name, scheduling: BenchLoopScheduling.chosen)
        try thread.start()
        if let tid = thread.threadID { pin(tid, to: cpu) }
        return thread
    }

    /// Runs `body`, a side that runs on a pool's threads (Dispatch's,
    /// Swift's default executor's), placed as such a side can be. No handle
    /// reaches a pool's threads, but a thread inherits the pin of the thread
    /// that makes it. With both sides on one CPU (`same`) every thread of
    /// the process (listed in /proc/self/task) is pinned there; otherwise
    /// only the calling thread is pinned (`first`), the pool left free as a
    /// pool is in use. Afterwards each thread that was there before gets
    /// back the CPUs it had (another contender's pinned LoopThread keeps its
    /// CPU), and each thread born meanwhile may run anywhere: a pool thread
    /// born pinned would keep that pin for the rest of the run, and put
    /// later rows' pool sides on one CPU even across CPUs. Left free on one
    /// CPU, a pool side would run on either CPU from batch to batch
    /// (Benchmarks/README.md, "How it measures").
    func whilePoolPlaced<T>(_ body: () throws -> T) rethrows -> T {
        try Self.restoringAffinities { before in
            if mode == .same {
                for tid in before.keys { Self.pin(tid, to: first) }
            } else {
                Self.pin(0, to: first)
            }
            return try body()
        }
    }

    /// Runs `body`, a flood from the calling thread to another process over
    /// ipc, with the calling thread on `first` and this process's libzmq
    /// I/O threads (named `ZMQbg/IO/<n>`: they write what the sockets
    /// queued) on `second`, the receiver's CPU; afterwards each as before.
    /// Left free, the I/O thread runs on the sender's CPU in some passes and
    /// on the other in the rest, and the row follows where it fell
    /// (Benchmarks/README.md, "How it measures").
    func whileFloodPlaced<T>(_ body: () throws -> T) rethrows -> T {
        try whileIOThreadsPlaced(on: second, body)
    }

    /// Runs `body`, a round trip from the calling thread (or a pinned
    /// LoopThread) to another process, with the calling thread and this
    /// process's libzmq I/O threads on `first`, the pinger's CPU, as the
    /// child's run with it on `second`; afterwards each as before. Left
    /// free, the I/O thread that carries the pinger's messages wakes on the
    /// other CPU, and a round trip "on one CPU" pays a wake-up across CPUs
    /// each way (Benchmarks/README.md, "How it measures").
    func whileRoundTripPlaced<T>(_ body: () throws -> T) rethrows -> T {
        try whileIOThreadsPlaced(on: first, body)
    }

    private func whileIOThreadsPlaced<T>(on cpu: Int32, _ body: () throws -> T) rethrows -> T {
        guard mode != .free else { return try body() }
        return try Self.restoringAffinities { before in
            for tid in before.keys where Self.threadName(tid).hasPrefix("ZMQbg/IO/") { Self.pin(tid, to: cpu) }
            Self.pin(0, to: first)
            return try body()
        }
    }

    /// Pins every thread of this process named `name` (as the kernel keeps
    /// it: 15 bytes at most) to `cpu`: for threads no handle reaches, such
    /// as a PortActorSystem's own LoopThread. Returns how many it pinned.
    @discardableResult
    static func pinThreads(named name: String, to cpu: Int32) -> Int {
        guard cpu >= 0 else { return 0 }
        let kept = String(decoding: name.utf8.prefix(15), as: UTF8.self)
        let matching = threadAffinities().keys.filter { threadName($0) == kept }
        for tid in matching { pin(tid, to: cpu) }
        return matching.count
    }

    /// Thread `tid`'s name (its `comm`), "" if it is gone.
    private static func threadName(_ tid: Int32) -> String {
        guard let file = fopen("/proc/self/task/\(tid)/comm", "r") else { return "" }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return "" }
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        var name = String(decoding: bytes, as: UTF8.self)
        if name.hasSuffix("\n") { name.removeLast() }
        return name
    }

    /// Runs `body` with the process's threads and their CPUs now; afterwards
    /// each of those threads gets back the CPUs it had (another contender's
    /// pinned LoopThread keeps its CPU) and each thread born meanwhile may
    /// run anywhere.
    private static func restoringAffinities<T>(_ body: ([Int32: [UInt64]]) throws -> T) rethrows -> T {
        let before = threadAffinities()
        defer {
            for (tid, mask) in before { setAffinity(tid, mask) }
            for (tid, _) in threadAffinities() where before[tid] == nil { _ = bench_unpin_thread(tid) }
        }
        return try body(before)
    }

    /// The process's threads now, each with the CPUs it may run on (16
    /// words: 1,024 CPUs, glibc's CPU_SETSIZE).
    private static func threadAffinities() -> [Int32: [UInt64]] {
        guard let directory = opendir("/proc/self/task") else { return [:] }
        defer { closedir(directory) }
        var threads: [Int32: [UInt64]] = [:]
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            guard let tid = Int32(name) else { continue }
            var mask = [UInt64](repeating: 0, count: 16)
            if bench_thread_affinity(tid, &mask, Int32(mask.count)) == 0 { threads[tid] = mask }
        }
        return threads
    }

    /// Gives thread `tid` the CPUs `mask` (a thread gone meanwhile is left alone).
    private static func setAffinity(_ tid: Int32, _ mask: [UInt64]) {
        _ = bench_set_thread_affinity(tid, mask, Int32(mask.count))
    }

    /// Runs `body` with the calling thread pinned to `cpu`, then lets it run anywhere again.
    static func whilePinned<T>(to cpu: Int32, _ body: () throws -> T) rethrows -> T {
        guard cpu >= 0 else { return try body() }
        pin(0, to: cpu)
        defer { _ = bench_unpin_thread(0) }
        return try body()
    }
}
