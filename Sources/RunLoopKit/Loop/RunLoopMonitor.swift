/// Receives a report of every pass of a loop and of every callout it makes:
/// what Android's Looper message logging is used for (finding what blocks a
/// thread). Set it with `RunLoop.monitor`; both methods run on the loop's
/// thread, right after what they report, so keep them quick.
///
/// With no monitor set, a pass costs one branch for it; with one set, two
/// clock reads per callout.
public protocol RunLoopMonitor: AnyObject, Sendable {
    /// After each callout: an observer, timer, custom source, socket source or block.
    func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport)
    /// After each pass through steps 2 to 11 of S-RUN-2.
    func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport)
}

extension RunLoopMonitor {
    public func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) {}
    public func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) {}
}

extension RunLoop {
    /// What a loop called out to.
    public enum CalloutKind: Sendable, Hashable, CustomStringConvertible {
        case observer(Activity)
        case timer
        case customSource
        case socketSource
        case block

        public var description: String {
            switch self {
            case let .observer(activity): "observer(\(activity))"
            case .timer: "timer"
            case .customSource: "customSource"
            case .socketSource: "socketSource"
            case .block: "block"
            }
        }
    }

    /// One callout: what ran, in which mode, on which thread, for how long.
    public struct CalloutReport: Sendable {
        public let kind: CalloutKind
        public let mode: Mode
        public let threadName: String
        /// When it started, on CLOCK_MONOTONIC.
        public let startNanoseconds: UInt64
        public let durationNanoseconds: UInt64
        public var duration: Duration { .nanoseconds(Int64(clamping: durationNanoseconds)) }
    }

    /// One pass of a run.
    public struct PassReport: Sendable {
        public let mode: Mode
        public let threadName: String
        /// Passes this loop has completed, this one included.
        public let passNumber: UInt64
        /// From the start of the pass to its decision, sleep included.
        public let durationNanoseconds: UInt64
        /// How long of that the loop slept.
        public let sleptNanoseconds: UInt64
        public let handledSource: Bool
        public let firedTimers: Int
        public var duration: Duration { .nanoseconds(Int64(clamping: durationNanoseconds)) }
    }
}
