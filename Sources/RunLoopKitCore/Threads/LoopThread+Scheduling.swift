internal import CLinuxSupport

extension LoopThread {
    /// How the kernel schedules a loop thread (docs/design.md, "How a loop
    /// thread is scheduled").
    ///
    /// A loop thread waits most of the time and has a short piece of work
    /// to do when it wakes: a message to deliver, a timer to fire. Linux
    /// (6.12 and later, whose scheduler is EEVDF) lets such a thread ask for
    /// a short time slice; woken, it then runs before a thread that has
    /// been running for longer, as Apple's systems run a run loop's main
    /// thread at a higher quality of service. Its share of the CPU stays
    /// what its nice value gives it: when it runs longer than its slice
    /// while others wait, the kernel switches away from it sooner.
    public enum Scheduling: Sendable, Hashable {
        /// A time slice of `latencySensitiveSlice` (the shortest Linux
        /// grants): the default of `LoopThread(name:)`. A kernel before
        /// 6.12 keeps its own slice.
        case latencySensitive
        /// Whatever the thread that calls `start()` has, as a thread made
        /// with `pthread_create` gets it: for a loop thread that runs long
        /// computations rather than short callouts.
        case inherited

        /// The slice a latency-sensitive loop thread asks for: 100 µs.
        public static let latencySensitiveSlice: Duration = .microseconds(100)

        /// Applies this scheduling to the calling thread: for a thread that
        /// runs a loop of its own (the main thread), as a `LoopThread` does
        /// at its start. Threads the calling thread makes later start with
        /// the kernel's default slice.
        /// Returns whether the kernel now keeps `latencySensitiveSlice` for
        /// the thread (always true for `.inherited`, which changes nothing);
        /// false from a kernel before 6.12, or for a real-time thread, whose
        /// scheduling this leaves as it is.
        @discardableResult
        public func applyToCurrentThread() -> Bool {
            switch self {
            case .inherited: return true
            case .latencySensitive:
                let (seconds, attoseconds) = Self.latencySensitiveSlice.components
                let nanoseconds = UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
                guard rlk_set_current_thread_time_slice(nanoseconds) == 0 else { return false }
                return rlk_thread_time_slice(0) == nanoseconds
            }
        }
    }
}
