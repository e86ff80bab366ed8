/// Memory and file descriptors per LoopThread and per port: RSS and open
/// fds per unit over many units (1,000 in the full run), each measurement in
/// a fresh child process (see MemoryChild for why). Peers: a SwiftNIO event
/// loop per thread (the same parts: a thread, epoll, eventfd and timerfd),
/// and a bare libzmq PULL socket per port (what a port is built on).
struct MemoryFootprint: Scenario {
    let name = "memory"
    let summary = "RSS and fds per LoopThread (vs NIO event loop) and per port (vs bare libzmq socket), in fresh processes"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let units = config.memoryUnits
        let kinds: [MemoryChild.Kind] = [.loopThread, .nioLoop, .port, .zmqSocket]
        var values: [MemoryChild.Kind: [String: [Double]]] = [:]
        var errors: [MemoryChild.Kind: String] = [:]
        // Interleaved rounds: loopthread, nio, port, zmq, loopthread, ...
        for _ in 0..<config.memoryRepetitions {
            for kind in kinds where errors[kind] == nil {
                do {
                    let child = try ChildProcess(role: "memory", cpu: -1, arguments: [kind.rawValue, String(units)], captureOutput: true)
                    let output = try child.readOutput(within: 120)
                    let ending = child.finish(within: 5)
                    let parsed = MemoryChild.parse(output)
                    guard parsed["rss_kib"] != nil, parsed["fds"] != nil else {
                        throw BenchError("the memory child (\(kind.rawValue)) printed nothing usable; it \(ending)")
                    }
                    for (key, value) in parsed { values[kind, default: [:]][key, default: []].append(value) }
                } catch {
                    errors[kind] = "\(error)"
                }
            }
        }
        func side(_ kind: MemoryChild.Kind, _ key: String, _ label: String) -> Measurement {
            Measurement(label: label, samples: errors[kind] == nil ? values[kind]?[key] ?? [] : [], better: .lower,
                        error: errors[kind])
        }
        let threadLabels = ("RunLoopKit LoopThread", "SwiftNIO event loop (MultiThreadedEventLoopGroup thread)")
        let portLabels = ("RunLoopKit Port (inproc, scheduled on a loop)", "bare libzmq PULL socket (bound inproc)")
        let sizes = "\(units) units made in a fresh process after one warm-up unit; \(config.memoryRepetitions) process\(config.memoryRepetitions == 1 ? "" : "es") per side; RSS from /proc/self/statm"
        var portNotes = [sizes]
        if let rss = Summary(values[.port]?["send_rss_kib"] ?? [], better: .lower),
           let fds = Summary(values[.port]?["send_fds"] ?? [], better: .lower) {
            portNotes.append("not included above: a port's first send adds \(format(fds.median)) fd and \(format(rss.median)) KiB (its sending socket, kept for later sends)")
        }
        return [
            ScenarioResult(name: "memory-loopthread-rss", title: "memory per LoopThread (RSS)", unit: "KiB/thread", better: .lower,
                           ours: side(.loopThread, "rss_kib", threadLabels.0), peer: side(.nioLoop, "rss_kib", threadLabels.1),
                           target: nil, notes: [sizes, "a thread's stack counts only as far as it is touched"]),
            ScenarioResult(name: "memory-loopthread-fds", title: "file descriptors per LoopThread", unit: "fds/thread", better: .lower,
                           ours: side(.loopThread, "fds", threadLabels.0), peer: side(.nioLoop, "fds", threadLabels.1),
                           target: nil, notes: ["a LoopThread's loop holds an epoll fd, an eventfd and a timerfd"]),
            ScenarioResult(name: "memory-port-rss", title: "memory per port (RSS)", unit: "KiB/port", better: .lower,
                           ours: side(.port, "rss_kib", portLabels.0), peer: side(.zmqSocket, "rss_kib", portLabels.1),
                           target: nil, notes: portNotes),
            ScenarioResult(name: "memory-port-fds", title: "file descriptors per port", unit: "fds/port", better: .lower,
                           ours: side(.port, "fds", portLabels.0), peer: side(.zmqSocket, "fds", portLabels.1),
                           target: nil, notes: ["libzmq gives every socket a mailbox (an eventfd)"]),
        ]
    }
}
