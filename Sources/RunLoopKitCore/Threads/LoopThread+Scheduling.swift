internal import CLinuxSupport

extension LoopThread {
    /// How the kernel schedules a loop thread (docs/design.md, "How a loop
    /// thread is scheduled").
    ///
    /// By default a loop thread is scheduled as any thread is: the kernel's
    /// time slice and the nice value of the thread that starts it. Linux
    /// (6.12 and later, whose scheduler is EEVDF) also lets a thread ask for
    /// a short slice; woken, it then runs before a thread that has been
    /// running for longer, as Apple's systems run a run loop's main thread
    /// at a higher quality of service. That helps a loop that shares its
    /// CPU with long computations not on its messages' path; where the
    /// threads that pass its messages on share the CPU (libzmq's I/O
    /// threads), it costs a round trip more than it saves.
    public enum Scheduling: Sendable, Hashable {
        /// Whatever the thread that calls `start()` has, as a thread made
        /// with `pthread_create` gets it: the default of `LoopThread(name:)`.
        case inherited
        /// A time slice of `latencySensitiveSlice` (the shortest Linux
        /// grants), the nice value kept: for a loop that must answer
        /// promptly on a CPU busy with other work. A kernel before 6.12
        /// keeps its own slice.
        case latencySensitive

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
