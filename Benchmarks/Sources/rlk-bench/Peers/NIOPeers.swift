import CBenchPeers
import NIOCore
import NIOPosix

/// Pins an event loop's thread (found by asking the loop for its tid).
func pin(_ loop: any EventLoop, to cpu: Int32) throws {
    guard cpu >= 0 else { return }
    let tid = try loop.submit { bench_gettid() }.wait()
    Placement.pin(tid, to: cpu)
}

/// SwiftNIO's EventLoop.execute round trip: loop A executes a closure on
/// loop B, which executes one back on A (two loops of one
/// MultiThreadedEventLoopGroup, each its own thread, as two LoopThreads are).
final class NIOExecutePingPong: Contender {
    let label = "SwiftNIO EventLoop.execute"
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private var group: MultiThreadedEventLoopGroup?
    private let recorder: SampleRecorder

    init(iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.placement = placement
        recorder = SampleRecorder(capacity: iterations)
    }

    func setUp() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        self.group = group
        let loops = Array(group.makeIterator())
        try pin(loops[0], to: placement.first)
        try pin(loops[1], to: placement.second)
    }

    func measure() throws -> [Double] {
        guard let group else { throw BenchError("not set up") }
        let loops = Array(group.makeIterator())
        let (a, b) = (loops[0], loops[1])
        recorder.reset(warmup: warmup, samples: iterations)
        let recorder = self.recorder
        a.execute { NIOExecutePingPong.ping(recorder, a, b) }
        return try recorder.waitForSamples(seconds: timeout, what: "NIO execute round trips")
    }

    private static func ping(_ recorder: SampleRecorder, _ a: any EventLoop, _ b: any EventLoop) {
        recorder.mark = monotonicNanoseconds()
        b.execute {
            a.execute {
                if recorder.record(monotonicNanoseconds() - recorder.mark) {
                    ping(recorder, a, b)
                } else {
                    recorder.done.open()
                }
            }
        }
    }

    func tearDown() {
        try? group?.syncShutdownGracefully()
        group = nil
    }
}

/// SwiftNIO's execute throughput: the calling thread executes `count` empty
/// closures on one EventLoop; the batch ends when the last has run.
final class NIOExecuteFlood: Contender {
    let label = "SwiftNIO EventLoop.execute"
    private let count: Int
    private let timeout: Double
    private let placement: Placement
    private var group: MultiThreadedEventLoopGroup?

    init(count: Int, timeout: Double, placement: Placement) {
        self.count = count
        self.timeout = timeout
        self.placement = placement
    }

    func setUp() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.group = group
        try pin(group.next(), to: placement.second)
    }

    func measure() throws -> [Double] {
        try Placement.whilePinned(to: placement.first) { try measurePinned() }
    }

    private func measurePinned() throws -> [Double] {
        guard let loop = group?.next() else { throw BenchError("not set up") }
        let finished = SampleRecorder(capacity: 1)
        finished.reset(warmup: 0, samples: 1)
        let start = monotonicNanoseconds()
        for _ in 0..<(count - 1) { loop.execute {} }
        loop.execute {
            finished.mark = monotonicNanoseconds()
            finished.done.open()
        }
        try finished.done.wait(seconds: timeout, for: "\(count) NIO executes")
        return [Double(count) / (Double(finished.mark - start) / 1e9)]
    }

    func tearDown() {
        try? group?.syncShutdownGracefully()
        group = nil
    }
}

/// `count` NIO event loops (each a thread with its epoll, eventfd and
/// timerfd): the peer of a LoopThread for memory per unit. Returns a
/// release closure.
func startNIOEventLoops(_ count: Int) throws -> () -> Void {
    let group = MultiThreadedEventLoopGroup(numberOfThreads: count)
    // Make sure every loop runs: one task on each, waited for.
    for loop in group.makeIterator() {
        try loop.submit {}.wait()
    }
    return { try? group.syncShutdownGracefully() }
}
