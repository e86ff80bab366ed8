extension RunLoop {
    /// Why one run returned (CFRunLoopRunResult), decided at step 11 of S-RUN-2.
    public enum RunResult: Sendable, Hashable, CustomStringConvertible {
        /// The mode had no sources or timers (or was `common`, which cannot be run).
        case finished
        /// `stop()` ended the run.
        case stopped
        /// The run's deadline passed.
        case timedOut
        /// A source was handled and the run was asked to return after one.
        case handledSource

        /// The case's name, as in logs.
        public var description: String {
            switch self {
            case .finished: "finished"
            case .stopped: "stopped"
            case .timedOut: "timedOut"
            case .handledSource: "handledSource"
            }
        }
    }
}
