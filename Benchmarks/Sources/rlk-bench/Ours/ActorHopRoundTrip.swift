import NIOCore
import NIOPosix
import RunLoopKit

/// One side of a hop between two actors: its `ping` loop calls the other
/// side and back, recording each round trip, until the recorder has its
/// samples. The two kinds below differ only in their executor.
protocol HopActor: Actor {
    /// Touches the actor's state, so that the call needs the actor's
    /// executor (an empty method's hop may be optimised away).
    func pong() -> Int
    func ping(_ peer: Self, _ recorder: SampleRecorder) async
}

extension HopActor {
    /// The loop `ping` runs, isolated to `self`.
    func pingLoop(_ peer: Self, _ recorder: SampleRecorder) async {
        var more = true
        while more {
            let start = monotonicNanoseconds()
            let count = await peer.pong()
            more = recorder.record(monotonicNanoseconds() - start) && count > 0
        }
        recorder.done.open()
    }
}

/// An actor whose jobs run on the executor it was given (a LoopThread's or
/// an event loop's).
actor PinnedHopActor: HopActor {
    private let executor: UnownedSerialExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor }

    private var pongs = 0

    init(executor: UnownedSerialExecutor) { self.executor = executor }

    func pong() -> Int {
        pongs += 1
        return pongs
    }
    func ping(_ peer: PinnedHopActor, _ recorder: SampleRecorder) async { await pingLoop(peer, recorder) }
}

/// The same on Swift's default executor.
actor DefaultHopActor: HopActor {
    private var pongs = 0

    func pong() -> Int {
        pongs += 1
        return pongs
    }
    func ping(_ peer: DefaultHopActor, _ recorder: SampleRecorder) async { await pingLoop(peer, recorder) }
}

/// An actor method call hopping between two actors pinned to two threads
/// and back, timed per round trip: RunLoopKit's LoopThreads (S-EXEC-1),
/// SwiftNIO's event loops, or Swift's default executor (a pool: placed
/// only as `Placement.whilePoolPlaced` can).
final class ActorHopRoundTrip: Contender {
    enum Executors { case loopThreads, nioEventLoops, swiftDefault }

    let label: String
    private let executors: Executors
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private var threads: [LoopThread] = []
    private var group: MultiThreadedEventLoopGroup?
    /// Starts the measured loop on the first actor.
    private var start: ((SampleRecorder) -> Void)?
    private let recorder: SampleRecorder

    init(_ executors: Executors, iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.executors = executors
        label = switch executors {
        case .loopThreads: "RunLoopKit: actors on two LoopThreads"
        case .nioEventLoops: "SwiftNIO: actors on two EventLoops"
        case .swiftDefault: "Swift's default executor (a pool)"
        }
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.placement = placement
        recorder = SampleRecorder(capacity: iterations)
    }

    func setUp() throws {
        switch executors {
        case .loopThreads:
            threads = try [Placement.startedLoopThread("bench-actor-a", on: placement.first),
                           Placement.startedLoopThread("bench-actor-b", on: placement.second)]
            pinned(threads[0].asUnownedSerialExecutor(), threads[1].asUnownedSerialExecutor())
        case .nioEventLoops:
            let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
            self.group = group
            let loops = Array(group.makeIterator())
            try pin(loops[0], to: placement.first)
            try pin(loops[1], to: placement.second)
            pinned(loops[0].executor.asUnownedSerialExecutor(), loops[1].executor.asUnownedSerialExecutor())
        case .swiftDefault:
            let (a, b) = (DefaultHopActor(), DefaultHopActor())
            start = { recorder in Task { await a.ping(b, recorder) } }
        }
    }

    private func pinned(_ first: UnownedSerialExecutor, _ second: UnownedSerialExecutor) {
        let (a, b) = (PinnedHopActor(executor: first), PinnedHopActor(executor: second))
        start = { recorder in Task { await a.ping(b, recorder) } }
    }

    func measure() throws -> [Double] {
        guard let start else { throw BenchError("not set up") }
        recorder.reset(warmup: warmup, samples: iterations)
        let measureRoundTrips = { [recorder, timeout] () throws -> [Double] in
            start(recorder)
            return try recorder.waitForSamples(seconds: timeout, what: "actor round trips")
        }
        // Swift's default executor runs on a pool: placed as a pool can be.
        return try executors == .swiftDefault ? placement.whilePoolPlaced(measureRoundTrips) : measureRoundTrips()
    }

    func tearDown() {
        start = nil
        for thread in threads { thread.stop() }
        threads = []
        try? group?.syncShutdownGracefully()
        group = nil
    }
}
