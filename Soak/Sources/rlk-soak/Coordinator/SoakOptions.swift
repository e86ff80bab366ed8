import Glibc

/// `rlk-soak --seconds N [--children C] [--threads T] [--seed S]`, and the
/// knobs below them.
struct SoakOptions: Sendable {
    var seconds: Double = 0
    var children = 3
    var threads = 3
    var portsPerWorker = 3
    var streamsPerWorker = 3
    var maxBurst = 8
    var seed = UInt64(UInt32(truncatingIfNeeded: time(nil)))
    /// How long after SIGKILL every sender must have seen its send right
    /// invalid: docs/ports.md promises 1 second.
    var invalidationBound = 1.0
    /// Seconds between kills, drawn from this range.
    var killInterval = 5.0...12.0

    static let usage = """
        usage: rlk-soak --seconds N [--children C] [--threads T] [--seed S]
                        [--ports P] [--streams S] [--burst B] [--invalidation-bound SECONDS]
          --seconds N    how long the load runs (the checks and the drain come after)
          --children C   child processes at all times (default 3; child 1 is never killed)
          --threads T    LoopThreads per child (default 3), each with P ports (default 3)
                         and S outgoing streams (default 3), bursts of up to B messages (default 8)
          --seed S       the seed of the random schedule (default: from the clock, printed)
        """

    /// The first part of the run, after which every process's descriptors
    /// and resident set are taken as the level to hold: a tenth of the
    /// run, at most 20 seconds.
    var warmUp: Double { min(seconds / 10, 20) }

    init(parsing arguments: ArraySlice<String>) throws(UsageError) {
        var rest = arguments
        while let flag = rest.popFirst() {
            guard let text = rest.popFirst() else { throw UsageError("\(flag) needs a value") }
            func number<T: LosslessStringConvertible>(_: T.Type) throws(UsageError) -> T {
                guard let value = T(text) else { throw UsageError("\(flag): '\(text)' is not a number") }
                return value
            }
            switch flag {
            case "--seconds": seconds = try number(Double.self)
            case "--children": children = try number(Int.self)
            case "--threads": threads = try number(Int.self)
            case "--ports": portsPerWorker = try number(Int.self)
            case "--streams": streamsPerWorker = try number(Int.self)
            case "--burst": maxBurst = try number(Int.self)
            case "--seed": seed = try number(UInt64.self)
            case "--invalidation-bound": invalidationBound = try number(Double.self)
            default: throw UsageError("unknown option \(flag)")
            }
        }
        guard seconds >= 10 else { throw UsageError("--seconds must be at least 10") }
        guard children >= 2 else { throw UsageError("--children must be at least 2 (one is never killed, the others are)") }
        guard threads >= 2, portsPerWorker >= 1, streamsPerWorker >= 1, maxBurst >= 1 else {
            throw UsageError("--threads at least 2; --ports, --streams and --burst at least 1")
        }
    }
}
