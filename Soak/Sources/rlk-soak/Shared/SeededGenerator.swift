/// SplitMix64: a small, fast generator whose whole sequence follows from
/// its seed, so that a run's schedule of events can be named by `--seed`.
/// (Threads and processes interleave as the OS decides, so a seed fixes
/// which events are drawn, not when each message meets them.)
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// A generator of its own for one participant (a child, a worker), so
    /// that their draws do not depend on each other's.
    init(seed: UInt64, stream: UInt64) {
        self.init(seed: seed ^ (stream &* 0x9E37_79B9_7F4A_7C15))
        _ = next()
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
