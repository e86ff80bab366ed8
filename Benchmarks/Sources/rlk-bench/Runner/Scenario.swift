/// Sizes of a run: the full run (docs/performance.md) or `--quick` (CI,
/// a few minutes, measured enough that a row's ratio moves less than 20 %
/// between runs: `scripts/quick-stability.py` checks). Every scenario reads
/// its counts from here, so that what --quick shrinks is in one place and
/// each row can say so.
struct RunConfig: Sendable {
    let quick: Bool
    /// Where the two threads of a measurement run (see Placement).
    let placement: Placement
    /// How many times every selected scenario runs, in turn (all of them,
    /// then all again), each row's samples pooled over the passes (see
    /// Passes.swift). On this kind of VM a scenario's figures drift with the
    /// host from one half-minute to the next, by more than any count of
    /// batches taken within one stretch evens out: passes spread a row's
    /// batches over the whole run.
    let passes: Int

    init(quick: Bool, placement: Placement, passes: Int? = nil) {
        self.quick = quick
        self.placement = placement
        self.passes = passes ?? Self.defaultPasses(quick: quick)
    }

    /// Twelve for a quick run, each pass short (one round of the timer
    /// scenarios, the port scaling in four visits of three short batches):
    /// a row's figure moves between runs as its pass levels' spread over the
    /// square root of their count, so more, shorter passes in the same time
    /// move it less (Benchmarks/README.md, "How it measures").
    static func defaultPasses(quick: Bool) -> Int { quick ? 12 : 1 }

    /// Round trips: repetitions, and round trips timed per repetition.
    var roundTripRepetitions: Int { 5 }
    var roundTripIterations: Int { quick ? 2_000 : 4_000 }
    /// Round trips dropped at the start of each repetition.
    var roundTripWarmup: Int { 200 }
    /// Distributed calls (and their gRPC peer): repetitions, and calls timed
    /// per repetition. Fewer than the port round trips in a quick run: a
    /// call to another process costs a few port round trips, and the two
    /// rows have a minute of a quick run's time between them.
    var distributedCallRepetitions: Int { quick ? 3 : 5 }
    var distributedCallIterations: Int { quick ? 500 : 2_000 }
    /// Calls dropped at the start of each repetition: fewer than a port
    /// round trip's 200, a gRPC call costing a millisecond here; the
    /// warm-up repetition before them is dropped whole.
    var distributedCallWarmup: Int { 50 }
    /// Foundation's SocketPort is slow; fewer round trips for it and ours beside it.
    var socketPortIterations: Int { quick ? 400 : 2_000 }

    /// Throughput: timed batches per side, and messages per batch.
    var throughputRepetitions: Int { quick ? 9 : 10 }
    var throughputMessages: Int { quick ? 50_000 : 300_000 }
    var performMessages: Int { quick ? 200_000 : 500_000 }
    var mainQueueBlocks: Int { quick ? 100_000 : 300_000 }

    /// The idle loop's observation window.
    var idleSeconds: Double { quick ? 2 : 10 }

    /// Timer lateness: seconds observed per repetition, repetitions per side.
    /// As long in a quick run as in a full one: a shorter window lets one
    /// stretch of the host move the median.
    var timerSeconds: Double { 2.5 }
    /// One round a visit in a quick run: its visits are its draws.
    var timerRepetitions: Int { quick ? 1 : 2 }
    /// Timers at scale, visits per pass: a quick pass visits it twice, so
    /// that the fresh processes of a timer change fall in twice as many
    /// stretches of the host's pace, which sets their level
    /// (Benchmarks/README.md, "How it measures").
    var timerChurnVisitsPerPass: Int { quick ? 2 : 1 }
    /// Timers at scale: how long the probes of a churn round are spread over,
    /// and the changes timed per round at each timer count.
    var timerChurnWindow: Double { 2 }
    var timerChanges: Int { quick ? 60_000 : 100_000 }

    /// Port scaling: port counts, messages per batch, batches per count
    /// and visit, visits per pass. A quick pass visits it four times, three
    /// short batches each (forty-eight visits over twelve passes): its
    /// sides' pace is the host's of the moment, which lasts longer than a
    /// visit's batches, so what narrows a centre is visits at more moments,
    /// not more batches in one (Benchmarks/README.md, "How it measures").
    var scalingPortCounts: [Int] { quick ? [1, 10, 100, 1_000] : [1, 10, 100, 1_000, 10_000] }
    var scalingMessages: Int { quick ? 50_000 : 200_000 }
    var scalingRepetitions: Int { quick ? 3 : 5 }
    var scalingVisitsPerPass: Int { quick ? 4 : 1 }

    /// Memory: units made per measurement, measurements per side.
    var memoryUnits: Int { quick ? 200 : 1_000 }
    var memoryRepetitions: Int { quick ? 2 : 3 }

    /// Tap: messages per batch, batches per side.
    var tapMessages: Int { quick ? 30_000 : 100_000 }
    var tapRepetitions: Int { quick ? 5 : 6 }

    /// Keep-alive churn: LoopThreads started and stopped.
    var churnCount: Int { quick ? 6_000 : 100_000 }

    /// How long any single wait for the code under test may take.
    var timeoutSeconds: Double { 60 }
}

/// A scenario: one file under Scenarios/, one or more rows of the report.
protocol Scenario: Sendable {
    /// The name --filter matches and rows start with.
    var name: String { get }
    /// One line for --list.
    var summary: String { get }
    func run(_ config: RunConfig) -> [ScenarioResult]
    /// How many times a pass runs it, at evenly spaced places among the
    /// other scenarios (PassSchedule): each visit is one more draw of the
    /// host's pace for its rows. One unless a scenario says otherwise.
    func visitsPerPass(_ config: RunConfig) -> Int
}

extension Scenario {
    func visitsPerPass(_ config: RunConfig) -> Int { 1 }
}

/// Every scenario, in report order.
let allScenarios: [any Scenario] = [
    RoundTripInproc(),
    ThroughputInproc(),
    FanInInproc(),
    RequestRoundTripInproc(),
    DistributedCallThreads(),
    RoundTripIPC(),
    ThroughputIPC(),
    DistributedCallProcesses(),
    RoundTripTCP(),
    ThroughputTCP(),
    PerformRoundTrip(),
    ActorHop(),
    PerformThroughput(),
    MainQueueDrain(),
    FoundationRoundTrip(),
    IdleLoop(),
    TimerLateness(),
    TimerChurn(),
    PortScaling(),
    MemoryFootprint(),
    TapCost(),
    KeepAliveChurn(),
]
