import Synchronization

/// A queued block that can still be cancelled: what
/// `RunLoop.perform(order:inModes:tag:file:line:block:)` and
/// `LoopThread.perform(order:inModes:tag:file:line:_:)` return, as
/// NSRunLoop's `cancelPerform(_:target:argument:)` cancels what
/// `perform(_:target:argument:order:modes:)` queued.
///
/// ```swift
/// let request = loop.perform(order: 0, inModes: [.default]) { print("saved") }
/// request?.cancel()          // before the loop ran it: "saved" never prints
/// ```
///
/// Threading: any thread. `cancel()` never blocks and never waits for the
/// block: one that has started finishes. A block is cancelled, started, or
/// still waiting; exactly one of `cancel()` and the loop wins.
public final class PerformRequest: Sendable {
    /// waiting → started (the loop took it), or waiting → cancelled.
    private let state = Atomic<UInt8>(PerformRequest.waiting)
    private static let waiting: UInt8 = 0
    private static let started: UInt8 = 1
    private static let cancelled: UInt8 = 2

    init() {}

    /// Cancels the block if it has not started: it will never run, and the
    /// loop drops it at its next block step. Returns true if this call
    /// cancelled it; false if it had started (or run), or was cancelled
    /// already. Idempotent.
    @discardableResult
    public func cancel() -> Bool {
        state.compareExchange(expected: Self.waiting, desired: Self.cancelled, ordering: .acquiringAndReleasing).exchanged
    }

    /// Whether the block was cancelled before it started.
    public var isCancelled: Bool { state.load(ordering: .acquiring) == Self.cancelled }

    /// The loop takes the block to run it: false if it was cancelled first.
    func begin() -> Bool {
        state.compareExchange(expected: Self.waiting, desired: Self.started, ordering: .acquiringAndReleasing).exchanged
    }
}
