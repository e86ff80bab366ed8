import Glibc
import RunLoopKit

/// `rlk-bench --workload <name> <count>`: one side of one scenario, run once
/// with `count` messages and nothing else (no interleaving, no warm-up
/// round, no report), for the scripts in Benchmarks/scripts that count what
/// a message costs under valgrind (instructions with callgrind, allocations
/// with memcheck). They run each workload at two counts and take the
/// difference, so that start-up, set-up and tear-down cancel.
///
/// Threads are not pinned here (valgrind runs one thread at a time anyway;
/// the scripts pin the whole process with taskset).
enum Workload {
    struct Entry: Sendable {
        let name: String
        let summary: String
        let make: @Sendable (_ count: Int) -> any Contender
    }

    static let timeout = 120.0
    static let placement = Placement(.free)

    static let all: [Entry] = [
        Entry(name: "oneway", summary: "RunLoopKit: one thread sends N 64 B PortMessages to a LoopThread's port (throughput-inproc)") {
            PortFlood(label: "oneway", count: $0, timeout: timeout, placement: placement, fillsSendPool: true)
        },
        Entry(name: "oneway-in-place", summary: "RunLoopKit: as oneway, sent from bytes and read in place (throughput-inproc-in-place)") {
            PortFlood(label: "oneway-in-place", count: $0, timeout: timeout, placement: placement, inPlace: true,
                      fillsSendPool: true)
        },
        Entry(name: "oneway-raw", summary: "raw libzmq: N 64 B messages PUSH → PULL between two threads, inproc (C)") {
            RawZMQFlood(label: "oneway-raw", endpoint: "inproc://rlk-workload", count: $0, timeout: timeout, placement: placement)
        },
        Entry(name: "oneway-raw-polled", summary: "raw libzmq: N 64 B messages PUSH → PULL between two threads, the PULL in epoll on ZMQ_FD, inproc (C)") {
            RawZMQFlood(label: "oneway-raw-polled", polled: true, endpoint: "inproc://rlk-workload", count: $0, timeout: timeout,
                        placement: placement)
        },
        Entry(name: "roundtrip", summary: "RunLoopKit: N 64 B round trips between two LoopThreads' ports (roundtrip-inproc)") {
            PortPingPong(label: "roundtrip", transport: .inproc, iterations: $0, warmup: 0, timeout: timeout, placement: placement,
                         makeEcho: { try PortPingPong.threadEcho(name: "bench-pong", transport: .inproc, cpu: -1) })
        },
        Entry(name: "roundtrip-raw", summary: "raw libzmq: N 64 B round trips over PAIR between two threads, inproc (C)") {
            RawZMQPingPong(label: "roundtrip-raw", endpoint: "inproc://rlk-workload", iterations: $0, warmup: 0,
                           timeout: timeout, placement: placement)
        },
        Entry(name: "roundtrip-raw-polled", summary: "raw libzmq: N 64 B round trips over PAIR between two threads, each in epoll on ZMQ_FD, inproc (C)") {
            RawZMQPingPong(label: "roundtrip-raw-polled", sockets: .pairPolled, endpoint: "inproc://rlk-workload", iterations: $0,
                           warmup: 0, timeout: timeout, placement: placement)
        },
        Entry(name: "request", summary: "RunLoopKit: N sendRequest round trips, 64 B, a thread → a LoopThread's port (request-roundtrip-inproc)") {
            PortRequestRoundTrip(iterations: $0, warmup: 0, timeout: timeout, placement: placement)
        },
        Entry(name: "request-typed", summary: "RunLoopKit: N typed sendRequest(_:as:) round trips, an id and 64 B, a thread → a LoopThread's port (typed-request-inproc)") {
            PortRequestRoundTrip(iterations: $0, warmup: 0, timeout: timeout, placement: placement, typed: true)
        },
        Entry(name: "request-raw", summary: "raw libzmq: N 64 B round trips over REQ/REP between two threads, inproc (C)") {
            RawZMQPingPong(label: "request-raw", sockets: .requestReply, endpoint: "inproc://rlk-workload", iterations: $0,
                           warmup: 0, timeout: timeout, placement: placement)
        },
        Entry(name: "fanin", summary: "RunLoopKit: 4 threads send N 64 B PortMessages in all to one LoopThread's port (fanin-inproc)") {
            PortFanIn(label: "fanin", senders: 4, count: $0 - $0 % 4, timeout: timeout, placement: placement)
        },
        Entry(name: "fanin-raw", summary: "raw libzmq: 4 PUSH threads send N 64 B messages in all to one PULL, inproc (C)") {
            RawZMQFanInThreads(label: "fanin-raw", endpoint: "inproc://rlk-workload", senders: 4, count: $0 - $0 % 4,
                               timeout: timeout, placement: placement)
        },
        Entry(name: "perform", summary: "RunLoopKit: one thread queues N empty blocks on a LoopThread's loop with RunLoop.perform (perform-throughput)") {
            PerformFlood(count: $0, timeout: timeout, placement: placement)
        },
        Entry(name: "perform-nio", summary: "SwiftNIO: one thread queues N empty closures on an event loop with EventLoop.execute") {
            NIOExecuteFlood(count: $0, timeout: timeout, placement: placement)
        },
        Entry(name: "perform-roundtrip", summary: "RunLoopKit: N perform round trips between two LoopThreads (perform-roundtrip)") {
            PerformPingPong(iterations: $0, warmup: 0, timeout: timeout, placement: placement)
        },
        Entry(name: "perform-roundtrip-nio", summary: "SwiftNIO: N EventLoop.execute round trips between two event loops") {
            NIOExecutePingPong(iterations: $0, warmup: 0, timeout: timeout, placement: placement)
        },
        Entry(name: "actor-hop", summary: "RunLoopKit: N actor calls to an actor on another LoopThread and back (actor-hop)") {
            ActorHopRoundTrip(.loopThreads, iterations: $0, warmup: 0, timeout: timeout, placement: placement)
        },
        Entry(name: "actor-hop-nio", summary: "SwiftNIO: N actor calls to an actor on another event loop and back") {
            ActorHopRoundTrip(.nioEventLoops, iterations: $0, warmup: 0, timeout: timeout, placement: placement)
        },
        Entry(name: "timer-change", summary: "RunLoopKit: N timer changes (invalidate, add, move in turn) with 1,000 timers on a LoopThread's loop (timer-change-1000)") {
            RLKTimerChanges(count: 1_000, changes: $0, batches: 1, cpu: -1)
        },
        Entry(name: "timer-change-100000", summary: "RunLoopKit: as timer-change, with 100,000 timers (timer-change-100000)") {
            RLKTimerChanges(count: 100_000, changes: $0, batches: 1, cpu: -1)
        },
        Entry(name: "timer-churn-passes", summary: "RunLoopKit: N passes of timer-churn-100000's loop, each firing the churn timer (an invalidate and an add among 100,000 timers), no probes") {
            RLKTimerChurnPasses(farCount: 100_000, fires: $0)
        },
        Entry(name: "timer-churn-passes-c", summary: "the C timer loop: as timer-churn-passes (C)") {
            CTimerChurnPasses(farCount: 100_000, fires: $0)
        },
        Entry(name: "send-only", summary: "RunLoopKit: N 64 B sends to a port that is not scheduled (nothing delivered; N < 2,000, the queue's room)") {
            SendOnly(count: $0, timeout: timeout)
        },
    ]

    /// Runs `arguments` (after `--workload`): a name and a count. Prints the
    /// measured value on stderr; returns the exit status.
    static func run(_ arguments: [String]) -> Int32 {
        if arguments == ["--list"] {
            for entry in all { print(TableReport.pad(entry.name, 15) + entry.summary) }
            return 0
        }
        guard arguments.count == 2, let entry = all.first(where: { $0.name == arguments[0] }),
              let count = Int(arguments[1]), count > 0 else {
            FileHandleOut.error("usage: rlk-bench --workload <name> <count>   (rlk-bench --workload --list names them)")
            return 2
        }
        do {
            try RunDirectory.prepare(sweepingDeadRuns: false)
        } catch {
            FileHandleOut.error("rlk-bench --workload: \(error)")
            return 1
        }
        let contender = entry.make(count)
        defer { contender.tearDown() }
        do {
            try contender.setUp()
            let values = try contender.measure()
            let median = values.sorted()[values.count / 2]
            FileHandleOut.error("\(entry.name) \(count): done (median \(format(median)))")
            return 0
        } catch {
            FileHandleOut.error("\(entry.name) \(count): \(error)")
            return 1
        }
    }
}

/// Sends `count` 64-byte PortMessages to a local port that no loop
/// receives on: only the send path runs (encoding, the send right's
/// channel, libzmq's queueing). The port's queue holds about 2,000 messages
/// (ZMQ_SNDHWM + ZMQ_RCVHWM, 1,000 each), so `count` must stay below that,
/// or the last send waits for room until its deadline and fails.
///
/// Measured in the steady state of a stream: the port's send channel sends
/// from a pool of buffers that fills to the most messages ever in flight
/// and is then used again and again. `setUp` fills it (a queue's worth
/// sent with nobody receiving, then delivered), so that a measured send
/// takes a buffer from it, as every send of a stream with a receiver does,
/// rather than making the pool's first ones.
final class SendOnly: Contender {
    let label = "send-only"
    private let count: Int
    private let timeout: Double
    private var port: Port?

    init(count: Int, timeout: Double) {
        self.count = count
        self.timeout = min(timeout, 5)
    }

    /// What `setUp` sends with nobody receiving, to fill the channel's
    /// pool: more than any measured count.
    static let unreceivedWarmUp = 1_800
    /// What `setUp` has delivered in all: a multiple of 1,000, the queue's
    /// half, which is how often libzmq's receiving side gives the sender
    /// its room back (so that the measured sends find the whole queue's room).
    static let warmUp = 2_000

    func setUp() throws {
        let port = try Port(transport: .inproc)
        self.port = port
        // Delivered by this thread's own loop, not a LoopThread: what the
        // loop allocates then does not depend on how threads were scheduled,
        // and cancels between the two runs the script compares.
        let counter = ArrivalCounter()
        counter.reset(expecting: Self.warmUp)
        port.setMessageHandler { _ in counter.arrive() }
        let loop = RunLoop.current
        try port.schedule(in: loop, forMode: .default)
        try send(Self.unreceivedWarmUp, to: port)
        try deliver(upTo: Self.unreceivedWarmUp, counter: counter, on: loop)
        try send(Self.warmUp - Self.unreceivedWarmUp, to: port)
        try deliver(upTo: Self.warmUp, counter: counter, on: loop)
        // Off the loop, the port receives nothing more: measured sends stay queued.
        port.remove(from: loop, forMode: .default)
        port.setMessageHandler(nil)
    }

    /// Runs `loop` until `counter` has seen `count` messages.
    private func deliver(upTo count: Int, counter: ArrivalCounter, on loop: RunLoop) throws {
        let deadline = Date() + timeout
        while counter.received < count {
            guard Date() < deadline else { throw BenchError("send-only warm-up: \(counter.received) of \(count) delivered") }
            _ = loop.run(mode: .default, before: deadline)
        }
    }

    func measure() throws -> [Double] {
        guard let port else { throw BenchError("not set up") }
        try send(count, to: port)
        return [Double(count)]
    }

    private func send(_ count: Int, to port: Port) throws {
        let payload: [PortMessage.Component] = [.data(Data(repeating: 0x2A, count: 64))]
        let deadline = Date() + timeout
        for _ in 0..<count { try port.send(msgid: 1, components: payload, before: deadline) }
    }

    func tearDown() {
        port?.invalidate()
        port = nil
    }
}
