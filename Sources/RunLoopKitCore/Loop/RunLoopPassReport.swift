extension RunLoop {
    /// One pass of a run.
    public struct PassReport: Sendable {
        /// The mode the loop was running.
        public let mode: Mode
        /// The loop's thread.
        public let threadName: String
        /// Passes this loop has completed, this one included.
        public let passNumber: UInt64
        /// When the pass started, on CLOCK_MONOTONIC.
        public let startNanoseconds: UInt64
        /// From the start of the pass to its decision, sleep included.
        public let durationNanoseconds: UInt64
        /// When the loop went to sleep in the pass, on CLOCK_MONOTONIC; 0
        /// if it did not sleep.
        public let sleepStartNanoseconds: UInt64
        /// How long of that the loop slept.
        public let sleptNanoseconds: UInt64
        /// Whether the pass handled a source or a perform request (S-BLK-5).
        public let handledSource: Bool
        /// How many timers fired in the pass.
        public let firedTimers: Int
        /// From the start of the pass to its decision, sleep included.
        public var duration: Duration { .nanoseconds(Int64(clamping: durationNanoseconds)) }
    }
}
