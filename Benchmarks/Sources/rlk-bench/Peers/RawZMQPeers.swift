import CBenchPeers
import Glibc
import RunLoopKit

/// A C peer's return code as a Swift error.
func checkC(_ result: Int32, _ what: String) throws {
    if result != 0 { throw BenchError("\(what) failed: \(String(cString: strerror(-result))) (\(result))") }
}

/// Raw libzmq round trip between two threads of this process: PAIR sockets
/// (or REQ and REP), 64-byte messages, the calling thread pings, a C thread
/// echoes. The transport's own limit for RunLoopKit's inproc round trip
/// (PAIR) and for its sendRequest (REQ/REP); `pairPolled` serves each PAIR
/// socket as an event loop must (epoll on ZMQ_FD, non-blocking receives
/// until empty): what integrating libzmq into any loop costs.
final class RawZMQPingPong: Contender {
    enum Sockets { case pair, pairPolled, requestReply }

    let label: String
    private let sockets: Sockets
    private let endpoint: String
    private let iterations: Int
    private let warmup: Int
    private let timeoutMilliseconds: Int32
    private let placement: Placement

    init(label: String, sockets: Sockets = .pair, endpoint: String, iterations: Int, warmup: Int, timeout: Double,
         placement: Placement) {
        self.label = label
        self.sockets = sockets
        self.endpoint = endpoint
        self.iterations = iterations
        self.warmup = warmup
        self.placement = placement
        timeoutMilliseconds = Int32(timeout * 1000)
    }

    func measure() throws -> [Double] {
        var samples = [UInt64](repeating: 0, count: iterations)
        let run = switch sockets {
        case .pair: bench_zmq_pingpong_threads
        case .pairPolled: bench_zmq_pingpong_threads_polled
        case .requestReply: bench_zmq_reqrep_threads
        }
        try checkC(run(endpoint, Int32(warmup), Int32(iterations), &samples, timeoutMilliseconds,
                       placement.first, placement.second),
                   "\(label) ping-pong")
        return samples.map { Double($0) / 1000 }
    }
}

/// Raw libzmq one-way throughput between two threads: PUSH from the calling
/// thread, PULL in a C thread, 64-byte messages. One sample per batch, in
/// messages per second.
/// `polled`: the PULL thread served as an event loop serves it (epoll on
/// ZMQ_FD, non-blocking receives until empty). `frameBytes`: frames of that
/// size instead of 64 bytes (blocking receive only).
final class RawZMQFlood: Contender {
    let label: String
    private let polled: Bool
    private let frameBytes: Int?
    private let endpoint: String
    private let count: Int
    private let timeoutMilliseconds: Int32
    private let placement: Placement

    init(label: String, polled: Bool = false, frameBytes: Int? = nil, endpoint: String, count: Int, timeout: Double,
         placement: Placement) {
        precondition(!(polled && frameBytes != nil), "the polled peer sends 64-byte frames only")
        self.label = label
        self.polled = polled
        self.frameBytes = frameBytes
        self.endpoint = endpoint
        self.count = count
        self.placement = placement
        timeoutMilliseconds = Int32(timeout * 1000)
    }

    func measure() throws -> [Double] {
        var elapsed: UInt64 = 0
        let result = if let frameBytes {
            bench_zmq_throughput_threads_sized(endpoint, Int32(frameBytes), Int32(count), &elapsed, timeoutMilliseconds,
                                               placement.first, placement.second)
        } else {
            (polled ? bench_zmq_throughput_threads_polled : bench_zmq_throughput_threads)(
                endpoint, Int32(count), &elapsed, timeoutMilliseconds, placement.first, placement.second)
        }
        try checkC(result, "\(label) throughput")
        return [Double(count) / (Double(elapsed) / 1e9)]
    }
}

/// Raw libzmq fan-in between threads: `senders` C threads, each with its own
/// PUSH socket, into one PULL read by the calling thread, 64-byte messages,
/// inproc. One sample per batch, in messages per second.
final class RawZMQFanInThreads: Contender {
    let label: String
    private let endpoint: String
    private let senders: Int
    private let count: Int
    private let timeoutMilliseconds: Int32
    private let placement: Placement

    /// `count` messages in all, a multiple of `senders`.
    init(label: String, endpoint: String, senders: Int, count: Int, timeout: Double, placement: Placement) {
        self.label = label
        self.endpoint = endpoint
        self.senders = senders
        self.count = count
        self.placement = placement
        timeoutMilliseconds = Int32(timeout * 1000)
    }

    func measure() throws -> [Double] {
        var elapsed: UInt64 = 0
        try checkC(bench_zmq_fanin_threads(endpoint, Int32(senders), Int32(count / senders), &elapsed, timeoutMilliseconds,
                                           placement.first, placement.second), "\(label) fan-in")
        return [Double(count) / (Double(elapsed) / 1e9)]
    }
}

/// Raw libzmq between two processes. Over ipc this process binds a PAIR, a
/// PUSH and an acknowledgement PULL in the run directory; a child
/// (`rlk-bench --child zmq-peer`) connects, echoes the PAIR and counts what
/// the PUSH sends. Over tcp, in RunLoopKit's tcp shape, this process binds a
/// ROUTER on loopback (a CURVE server when asked), a child (`--child
/// zmq-tcp-peer`) connects a DEALER, says hello, echoes pings and counts
/// data. Round trips or throughput, depending on `mode`.
final class RawZMQProcessPeer: Contender {
    enum Mode { case roundTrip(iterations: Int, warmup: Int), throughput(count: Int) }
    enum Transport { case ipc, tcp(curve: Bool) }

    let label: String
    private let mode: Mode
    private let transport: Transport
    private let timeoutMilliseconds: Int32
    private let placement: Placement
    private var link: OpaquePointer?
    private var tcpLink: OpaquePointer?
    private var child: ChildProcess?

    init(label: String, mode: Mode, transport: Transport = .ipc, timeout: Double, placement: Placement) {
        self.label = label
        self.mode = mode
        self.transport = transport
        self.placement = placement
        timeoutMilliseconds = Int32(timeout * 1000)
    }

    func setUp() throws {
        switch transport {
        case .ipc:
            let pair = RunDirectory.ipcEndpoint("zmq-pair.sock")
            let push = RunDirectory.ipcEndpoint("zmq-push.sock")
            let acks = RunDirectory.ipcEndpoint("zmq-acks.sock")
            guard let link = bench_zmq_link_open(pair, push, acks) else {
                throw BenchError("binding the raw libzmq ipc sockets failed: \(String(cString: strerror(errno)))")
            }
            self.link = link
            child = try ChildProcess(role: "zmq-peer", cpu: placement.second, arguments: [pair, push, acks])
            try checkC(bench_zmq_link_wait_ready(link, 10_000), "waiting for the zmq-peer child")
        case let .tcp(curve):
            // The child listens and says where; this side dials, as ours' benchmark dials its child's tcp port.
            let started = try ChildProcess(role: "zmq-tcp-peer", cpu: placement.second, arguments: [curve ? "curve" : "plain"],
                                           captureOutput: true)
            child = started
            let words = try started.readLine(within: 10).split(separator: " ").map(String.init)
            guard words.count == 2 else { throw BenchError("the zmq-tcp-peer child said \(words), not its endpoint and key") }
            guard let link = bench_zmq_tcp_link_open(words[0], words[1] == "-" ? "" : words[1]) else {
                throw BenchError("connecting the raw libzmq tcp DEALER failed: \(String(cString: strerror(errno)))")
            }
            tcpLink = link
            try checkC(bench_zmq_tcp_link_wait_ready(link, 10_000), "waiting for the zmq-tcp-peer child")
        }
    }

    func measure() throws -> [Double] {
        switch mode {
        case .roundTrip: try placement.whileRoundTripPlaced { try measurePinned() }
        // As RLKProcessFlood's: the I/O threads with the receiver.
        case .throughput: try placement.whileFloodPlaced { try measurePinned() }
        }
    }

    private func measurePinned() throws -> [Double] {
        guard link != nil || tcpLink != nil else { throw BenchError("not set up") }
        if RawTimeSlice.asked, tcpLink != nil { LoopThread.Scheduling.latencySensitive.applyToCurrentThread() }
        switch mode {
        case let .roundTrip(iterations, warmup):
            var samples = [UInt64](repeating: 0, count: iterations)
            let result = if let link {
                bench_zmq_link_pingpong(link, Int32(warmup), Int32(iterations), &samples, timeoutMilliseconds)
            } else {
                bench_zmq_tcp_link_pingpong(tcpLink, Int32(warmup), Int32(iterations), &samples, timeoutMilliseconds)
            }
            try checkC(result, "\(label) ping-pong")
            return samples.map { Double($0) / 1000 }
        case let .throughput(count):
            var elapsed: UInt64 = 0
            let result = if let link {
                bench_zmq_link_throughput(link, Int32(count), &elapsed, timeoutMilliseconds)
            } else {
                bench_zmq_tcp_link_throughput(tcpLink, Int32(count), &elapsed, timeoutMilliseconds)
            }
            try checkC(result, "\(label) throughput")
            return [Double(count) / (Double(elapsed) / 1e9)]
        }
    }

    func tearDown() {
        if let link { bench_zmq_link_close(link) }
        if let tcpLink { bench_zmq_tcp_link_close(tcpLink) }
        link = nil
        tcpLink = nil
        child?.finish(within: 3)
        child = nil
        if case .ipc = transport {
            for name in ["zmq-pair.sock", "zmq-push.sock", "zmq-acks.sock"] { unlink(RunDirectory.path + "/" + name) }
        }
    }
}

/// Raw libzmq serving many sockets from one thread: `sockets` PULL sockets
/// on one epoll set, messages sent round-robin to them from the calling
/// thread, each signalled socket drained. What the transport itself costs
/// per message when every message goes to another socket, for comparing
/// RunLoopKit's port-scaling curve with libzmq's own. One sample per batch,
/// in nanoseconds per message.
final class RawZMQFanIn: Contender {
    /// Names the sockets actually made (file descriptors may run out first).
    private(set) var label: String
    private let sockets: Int
    private let messages: Int
    private let timeoutMilliseconds: Int32
    private let placement: Placement
    private var set: OpaquePointer?

    init(sockets: Int, messages: Int, timeout: Double, placement: Placement) {
        label = "raw libzmq, \(sockets) PULL socket\(sockets == 1 ? "" : "s") on one epoll set (C)"
        self.sockets = sockets
        self.messages = messages
        self.placement = placement
        timeoutMilliseconds = Int32(timeout * 1000)
    }

    func setUp() throws {
        guard let made = bench_zmq_fanin_open(Int32(sockets)) else {
            throw BenchError("\(label): cannot open \(sockets) socket pairs: \(String(cString: strerror(errno)))")
        }
        set = made
        let pairs = Int(bench_zmq_fanin_count(made))
        if pairs < sockets { label = "raw libzmq, \(pairs) PULL sockets on one epoll set (C; the fd limit allowed \(pairs) of \(sockets))" }
    }

    func measure() throws -> [Double] {
        guard let set else { throw BenchError("not set up") }
        var elapsed: UInt64 = 0
        try checkC(bench_zmq_fanin_run(set, Int32(messages), &elapsed, timeoutMilliseconds, placement.first, placement.second),
                   "\(label) batch")
        return [Double(elapsed) / Double(messages)]
    }

    func tearDown() {
        if let set { bench_zmq_fanin_close(set) }
        set = nil
    }
}

/// `RLK_BENCH_RAW_TIME_SLICE=1`: raw libzmq's tcp ping and echo threads
/// get the short time slice a latency-sensitive loop thread asks for; with
/// `RLK_BENCH_LOOP_SCHEDULING=latency-sensitive`, a run tells what that
/// scheduling does from what the code costs. The measuring thread keeps it
/// for the rest of the run.
enum RawTimeSlice {
    static let asked = getenv("RLK_BENCH_RAW_TIME_SLICE").map { String(cString: $0) == "1" } ?? false
}
