import CBenchPeers

/// The OS floor for a cross-thread round trip: two threads wake each other
/// through two eventfds, each sleeping in poll(2) (C). No library can do a
/// thread-to-thread round trip faster on this kernel; what a transport adds
/// on top is its own cost.
final class EventfdPingPong: Contender {
    let label = "OS floor (eventfd + poll, C)"
    private let iterations: Int
    private let warmup: Int
    private let timeoutMilliseconds: Int32
    private let placement: Placement

    init(iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.iterations = iterations
        self.warmup = warmup
        self.placement = placement
        timeoutMilliseconds = Int32(timeout * 1000)
    }

    func measure() throws -> [Double] {
        var samples = [UInt64](repeating: 0, count: iterations)
        try checkC(bench_eventfd_pingpong(Int32(warmup), Int32(iterations), &samples, timeoutMilliseconds,
                                          placement.first, placement.second), "eventfd ping-pong")
        return samples.map { Double($0) / 1000 }
    }
}
