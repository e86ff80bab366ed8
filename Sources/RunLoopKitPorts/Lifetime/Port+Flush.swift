@_spi(RunLoopKitInternals) import RunLoopKitCore

extension Port {
    /// Waits until every message this process's ports accepted for other
    /// processes has been written (over ipc, also read by the receiving
    /// process), or until `bound` has passed, and says what was left: what
    /// the process loses if it exits now. What a graceful shutdown calls
    /// before the process exits (RunLoopKitLifecycle's `PortFlushService`);
    /// the exit itself flushes the same way within `Port.exitBound`
    /// (S-PORT-4). Closes nothing: sends may go on meanwhile and after.
    /// Blocks the calling thread, for `bound` at most.
    public static func flushOutbound(within bound: Duration = Port.exitBound) -> PortFlushReport {
        let (seconds, attoseconds) = bound.components
        let nanoseconds = UInt64(clamping: max(0, seconds)) &* 1_000_000_000 &+ UInt64(max(0, attoseconds / 1_000_000_000))
        let started = MonotonicClock.now()
        let deadline = started &+ min(nanoseconds, UInt64.max / 2)
        let left = OutboundFlush.shared.flush(until: deadline)
        let overTCP = NetworkHub.flushIfStarted(until: deadline)
        var unwritten: [String: Int] = [:]
        for (place, count) in left.messages + overTCP { unwritten[place, default: 0] += count }
        return PortFlushReport(
            unwrittenMessages: unwritten, unreadBytes: left.bytes, uncountedChannels: left.uncountedChannels,
            busyChannels: left.busyChannels, elapsed: .nanoseconds(Int64(clamping: MonotonicClock.now() &- started)))
    }
}
