import CBenchPeers
import Glibc
import RunLoopKit

/// The `memory` child: measures what `units` units of one kind add to a
/// fresh process, and prints it as one line of `key=value` pairs.
///
/// A fresh process, because in a long-running one the allocator and glibc's
/// thread-stack cache hand back memory that earlier scenarios freed, and
/// libzmq closes sockets lazily (its reaper thread), so RSS and fd deltas
/// there say little. Here one unit is made first (to pay one-time costs:
/// libzmq's context and threads, RunLoopKit's registries, NIO's statics),
/// then the baseline is read, then `units` more are made and kept while the
/// process is measured again. It exits right after printing, without
/// tearing the units down: stopping 1,000 threads one by one takes seconds
/// and measures nothing; the kernel takes everything back.
enum MemoryChild {
    enum Kind: String, CaseIterable {
        case loopThread = "loopthread"
        case nioLoop = "nio-loop"
        case port = "port"
        case zmqSocket = "zmq-socket"
    }

    static func run(_ kind: Kind, units: Int) -> Int32 {
        do {
            var line = ""
            switch kind {
            case .loopThread:
                let warm = LoopThread(name: "mem-warm")
                try warm.start()
                let (rss0, fds0) = snapshot()
                var threads: [LoopThread] = []
                for index in 0..<units {
                    let thread = LoopThread(name: "mem-\(index)")
                    try thread.start()
                    threads.append(thread)
                }
                line = perUnit(since: (rss0, fds0), units: units)
                withExtendedLifetime((threads, warm)) {}
            case .nioLoop:
                let warm = try startNIOEventLoops(1)
                let (rss0, fds0) = snapshot()
                let release = try startNIOEventLoops(units)
                line = perUnit(since: (rss0, fds0), units: units)
                withExtendedLifetime((release, warm)) {}
            case .port:
                let host = LoopThread(name: "mem-host")
                try host.start()
                guard let loop = host.runLoop else { throw BenchError("LoopThread has no loop") }
                let counter = ArrivalCounter()
                func makePort() throws -> Port {
                    let port = try Port(transport: .inproc)
                    port.setMessageHandler { _ in counter.arrive() }
                    try port.schedule(in: loop, forMode: .default)
                    return port
                }
                // The warm-up port also sends once: the first send makes shared state.
                let warm = try makePort()
                _ = try PortFlood.sendBatch(to: [warm], count: 1, counter: counter, timeout: 10, what: "warm-up")
                let (rss0, fds0) = snapshot()
                var ports: [Port] = []
                for _ in 0..<units { ports.append(try makePort()) }
                let (rss1, fds1) = snapshot()
                _ = try PortFlood.sendBatch(to: ports, count: units, counter: counter, timeout: 30, what: "one message to each port")
                line = perUnit(since: (rss0, fds0), units: units, at: (rss1, fds1))
                    + " " + perUnit(since: (rss1, fds1), units: units, prefix: "send_")
                withExtendedLifetime((ports, warm, host)) {}
            case .zmqSocket:
                guard let set = bench_zmq_sockets_open(1) else { throw BenchError("bench_zmq_sockets_open failed") }
                let (rss0, fds0) = snapshot()
                try checkC(bench_zmq_sockets_add(set, Int32(units)), "bench_zmq_sockets_add")
                line = perUnit(since: (rss0, fds0), units: units)
            }
            FileHandleOut.out(line)
            _exit(0)
        } catch {
            FileHandleOut.error("rlk-bench memory child (\(kind.rawValue)): \(error)")
            return 1
        }
    }

    private static func snapshot() -> (rss: Int, fds: Int) {
        (ProcessStats.residentBytes(), ProcessStats.openFileDescriptors())
    }

    /// "rss_kib=… fds=…" per unit, from `start` to `end` (now by default).
    private static func perUnit(since start: (rss: Int, fds: Int), units: Int,
                                at end: (rss: Int, fds: Int)? = nil, prefix: String = "") -> String {
        let now = end ?? snapshot()
        let rss = Double(now.rss - start.rss) / 1024 / Double(units)
        let fds = Double(now.fds - start.fds) / Double(units)
        return "\(prefix)rss_kib=\(rss) \(prefix)fds=\(fds)"
    }

    /// Parses a child's line into its values.
    static func parse(_ line: String) -> [String: Double] {
        var values: [String: Double] = [:]
        for pair in line.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            let parts = pair.split(separator: "=", maxSplits: 1)
            if parts.count == 2, let value = Double(parts[1]) { values[String(parts[0])] = value }
        }
        return values
    }
}
