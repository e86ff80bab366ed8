/// What the coordinator gathered over the run, for the verdict.
struct Gathered {
    struct Kill {
        var incarnation: UInt32
        var pid: Int32
        /// When SIGKILL was sent (CLOCK_MONOTONIC, ns).
        var instant: UInt64
        /// The coordinator's own send right to the child's control port is
        /// one of the senders that must see the death.
        var coordinatorRecord: ChildRecord
    }

    var failures: [String] = []
    var kills: [Kill] = []
    /// Per incarnation (0: the coordinator), at the end of the warm-up.
    var baselines: [UInt32: ResourceSample] = [:]
    /// Per incarnation (0: the coordinator), at the end.
    var finals: [UInt32: ResourceSample] = [:]
    var stopReports: [StopReport] = []
    var drainReports: [DrainReport] = []
    var liveEndpoints: Set<UInt64> = []
    /// The children alive at the end.
    var children: [UInt32] = []
    var elapsed = 0.0
}
