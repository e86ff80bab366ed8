/// The random numbers a benchmark's load is made of (which timer to
/// change, how far away a new one goes): SplitMix64, a few arithmetic
/// instructions a number, as cheap as the C peers' `rand_r`. The standard
/// library's `SystemRandomNumberGenerator` asks the kernel (`getrandom`)
/// for every number: two system calls in each change of the timer churn,
/// which RunLoopKit's side would pay and the C peer's not
/// (Benchmarks/README.md, "How it measures").
struct LoadRandom: RandomNumberGenerator {
    private var state: UInt64

    /// Seeded from the system's generator once, so that runs differ.
    init() {
        var system = SystemRandomNumberGenerator()
        state = system.next()
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
