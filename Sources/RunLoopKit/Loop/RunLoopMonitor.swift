/// Receives a report of every pass of a loop and of every callout it makes:
/// what Android's Looper message logging is used for (finding what blocks a
/// thread). Set it with `RunLoop.monitor`; both methods run on the loop's
/// thread, right after what they report, so keep them quick.
///
/// A block's report names the block (`CalloutReport.origin`): the tag given
/// to `perform(tag:)` and the file and line of the `perform` call.
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

    /// One callout: what ran, in which mode, on which thread, for how long,
    /// and, for a queued block or a delayed perform, who queued it.
    ///
    /// Threading: an immutable value, made on the loop's thread when the
    /// callout returns; a monitor may keep it and read it on any thread.
    public struct CalloutReport: Sendable {
        public let kind: CalloutKind
        public let mode: Mode
        public let threadName: String
        /// When it started, on CLOCK_MONOTONIC.
        public let startNanoseconds: UInt64
        public let durationNanoseconds: UInt64
        /// Which block this was: the tag and the call site of the `perform`
        /// that queued it. Set for `.block` callouts (every `RunLoop.perform`,
        /// `performAndWait` and `LoopThread` perform variant) and for the
        /// `.timer` callout of a `perform(afterDelay:)`; nil for every other
        /// callout (observers, plain timers, custom and socket sources).
        public let origin: CalloutOrigin?
        public var duration: Duration { .nanoseconds(Int64(clamping: durationNanoseconds)) }
    }

    /// Where a queued block came from, so that a monitor can name the block
    /// that blocked a loop: the `tag` given to `perform` (nil if none) and
    /// the file and line of the `perform` call that queued it (captured with
    /// `#fileID` and `#line` when the block was queued).
    ///
    /// ```swift
    /// try worker.perform(tag: "parse") { parse(document) }
    /// // a monitor's report of it: origin?.description == "tag 'parse' (main.swift:42)"
    /// ```
    ///
    /// Threading: an immutable value; any thread may read it. The loop makes
    /// it on its own thread only when a monitor is set, so queuing a block
    /// builds no string while no monitor listens.
    public struct CalloutOrigin: Sendable, Hashable, CustomStringConvertible {
        /// The tag passed to `perform(tag:)`, `perform(afterDelay:tag:)` and
        /// the like; nil when the call gave none.
        public let tag: String?
        /// The `#fileID` of the call that queued the block: the module and
        /// the file name, as in "MyApp/Parser.swift".
        public let file: String
        /// The line of that call.
        public let line: UInt

        /// The file name without its module, and the line: "Parser.swift:42".
        public var location: String {
            let name = file.split(separator: "/").last.map(String.init) ?? file
            return "\(name):\(line)"
        }

        /// "tag 'parse' (Parser.swift:42)" with a tag, "Parser.swift:42" without.
        public var description: String {
            guard let tag else { return location }
            return "tag '\(tag)' (\(location))"
        }
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
