import Dispatch
public import Logging
public import RunLoopKitPorts
public import ServiceLifecycle

/// The process's ports, as a whole, as a swift-service-lifecycle
/// `Service`: at graceful shutdown it waits, within a bound (by default
/// `Port.exitBound`), until every message the ports accepted for other
/// processes has been written (`Port.flushOutbound(within:)`), logs what
/// was left, hands the report to `onFlushed`, and returns. Nothing is
/// closed: the process exits after the group, and its exit flushes the
/// rest within what is left of the exit bound.
///
/// Put it first in the group's services: it is shut down last, after the
/// loops that send (`LoopThreadService`) have finished.
public struct PortFlushService: Service {
    /// How long the flush waits at most.
    public let bound: Duration
    private let logger: Logger
    private let onFlushed: @Sendable (PortFlushReport) -> Void

    /// A service that flushes within `bound`, logs what was left with
    /// `logger` (an error line when anything was), and calls `onFlushed`
    /// with the report.
    public init(
        bound: Duration = Port.exitBound, logger: Logger = Logger(label: "RunLoopKit.Lifecycle"),
        onFlushed: @escaping @Sendable (PortFlushReport) -> Void = { _ in }
    ) {
        self.bound = bound
        self.logger = logger
        self.onFlushed = onFlushed
    }

    /// Waits for graceful shutdown or cancellation, then flushes.
    public func run() async throws {
        try? await gracefulShutdown()
        let bound = self.bound
        // Off Swift's pool: the flush blocks its thread, for `bound` at most.
        let report = await withCheckedContinuation { (done: CheckedContinuation<PortFlushReport, Never>) in
            DispatchQueue.global().async { done.resume(returning: Port.flushOutbound(within: bound)) }
        }
        if report.isEmpty {
            logger.info("ports flushed: \(report)")
        } else {
            logger.error("ports flushed within \(bound), but this was left (lost if the process exits now): \(report)")
        }
        onFlushed(report)
    }
}
