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
    /// Does nothing: implement it to hear of callouts.
    public func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) {}
    /// Does nothing: implement it to hear of passes.
    public func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) {}
}
