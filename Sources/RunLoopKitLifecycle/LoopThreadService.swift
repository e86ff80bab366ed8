import Dispatch
public import RunLoopKitCore
import RunLoopKitPorts
public import ServiceLifecycle

/// A `LoopThread` as a swift-service-lifecycle `Service`: a `ServiceGroup`
/// starts it (if it is not running yet) and, at graceful shutdown (a
/// signal the group was told of, or `triggerGracefulShutdown()`), stops it
/// after it has handled what was waiting for it: the messages already in
/// its ports' queues and its other ready sources (runs of the default mode
/// until a pass handles nothing, for `Port.exitBound` at most), then the
/// blocks queued for it (`stopAfterDraining()`). Made with
/// `draining: false`, it stops at once (`stop()`). `run()` returns once
/// the thread has ended. Cancelled instead, it stops the thread the same
/// way.
///
/// Put it after the services that send to its ports or queue work on it,
/// and after a `PortFlushService`: a group shuts its services down in
/// reverse order, so this loop finishes what it was given before the
/// process's ports flush what it sent.
public struct LoopThreadService: Service {
    /// The thread.
    public let thread: LoopThread
    /// Whether the shutdown runs what was queued first.
    public let draining: Bool

    /// A service for `thread`, which it starts if no one has.
    public init(_ thread: LoopThread, draining: Bool = true) {
        self.thread = thread
        self.draining = draining
    }

    /// Starts the thread if it is not running, waits for graceful shutdown
    /// or cancellation, then stops it and returns once it has ended.
    /// - Throws: `RunLoopError` if the thread cannot start (it was stopped
    ///   before: a LoopThread does not restart).
    public func run() async throws {
        if !thread.isRunning { try thread.start() }
        // Cancellation ends the wait too: either way, the thread stops.
        try? await gracefulShutdown()
        // Off Swift's pool: the stop joins the thread, which may be in a
        // long callout still.
        let (thread, draining) = (self.thread, self.draining)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                if draining {
                    Self.handleWhatIsReady(on: thread)
                    thread.stopAfterDraining()
                } else {
                    thread.stop()
                }
                done.resume()
            }
        }
    }

    /// On the thread: polls of the default mode (its common items, ports
    /// scheduled with `schedule(on:)` among them) until one handles
    /// nothing, or the exit bound has passed: what was already sent to its
    /// ports is delivered, not left in their queues.
    private static func handleWhatIsReady(on thread: LoopThread) {
        let deadline = ContinuousClock.now + Port.exitBound
        _ = try? thread.performAndWait {
            while ContinuousClock.now < deadline,
                  RunLoop.current.run(mode: .default, seconds: 0, returnAfterSourceHandled: true) == .handledSource {}
        }
    }
}
