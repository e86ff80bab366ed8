extension RunLoop {
    /// One callout: what ran, in which mode, on which thread, for how long,
    /// and, for a queued block or a delayed perform, who queued it.
    ///
    /// Threading: an immutable value, made on the loop's thread when the
    /// callout returns; a monitor may keep it and read it on any thread.
    public struct CalloutReport: Sendable {
        /// What ran.
        public let kind: CalloutKind
        /// The mode the loop was running.
        public let mode: Mode
        /// The loop's thread.
        public let threadName: String
        /// When it started, on CLOCK_MONOTONIC.
        public let startNanoseconds: UInt64
        /// How long it ran, in nanoseconds.
        public let durationNanoseconds: UInt64
        /// Which block this was: the tag and the call site of the `perform`
        /// that queued it. Set for `.block` callouts (every `RunLoop.perform`,
        /// `performAndWait` and `LoopThread` perform variant) and for the
        /// `.timer` callout of a `perform(afterDelay:)`; nil for every other
        /// callout (observers, plain timers, custom and socket sources).
        public let origin: CalloutOrigin?
        /// How long it ran.
        public var duration: Duration { .nanoseconds(Int64(clamping: durationNanoseconds)) }
    }
}
