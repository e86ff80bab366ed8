extension RunLoop {
    /// What a loop called out to.
    public enum CalloutKind: Sendable, Hashable, CustomStringConvertible {
        /// An observer told of the activity.
        case observer(Activity)
        /// A timer's block (a delayed perform's too).
        case timer
        /// A custom source's perform (Source0).
        case customSource
        /// A socket source's handler (Source1): for a port, one batch of messages.
        case socketSource
        /// A block queued with `perform`.
        case block
        /// A Swift concurrency job of the loop's executor: a slice of an
        /// actor's method, or of a task, on a `LoopThread` (S-EXEC-1).
        case job
        /// A drain of `DispatchQueue.main` by the main thread's loop: the
        /// blocks and `@MainActor` jobs waiting there (S-EXEC-3).
        case mainQueue

        /// The kind's name, as in logs: `observer(beforeWaiting)`, `timer`, …
        public var description: String {
            switch self {
            case let .observer(activity): "observer(\(activity))"
            case .timer: "timer"
            case .customSource: "customSource"
            case .socketSource: "socketSource"
            case .block: "block"
            case .job: "job"
            case .mainQueue: "mainQueue"
            }
        }
    }
}
