public import CoreMetrics
import RunLoopKitCore
import RunLoopKitPorts

/// RunLoopKit's figures in swift-metrics: what the ports and loops of this
/// process count (messages sent, delivered, dropped and failed per port;
/// passes, callouts and lag per loop; the tap's events and drops; tcp
/// connections per peer), reported to a `MetricsFactory`, the one
/// `MetricsSystem.bootstrap` installed unless another is given.
///
/// ```swift
/// MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
/// RunLoopKitMetrics.start()
/// ```
///
/// Until `start`, the library pays one relaxed load and a branch per
/// message and per pass for it. The metrics, their labels and the cap on
/// series are in docs/metrics.md.
public enum RunLoopKitMetrics {
    /// How many distinct ports (a port's name and, for a send right to a
    /// port on another host, its peer's address) and loops get series of
    /// their own; the ones beyond share the series labelled `other`. The
    /// default, 200, keeps a process's series in the low thousands.
    public static let defaultSeriesLimit = 200

    /// Starts reporting to `factory` (by default the one bootstrapped in
    /// `MetricsSystem`), replacing any earlier start. Loops hear of it at
    /// their next pass; ports at their next message.
    public static func start(factory: any MetricsFactory = MetricsSystem.factory, seriesLimit: Int = defaultSeriesLimit) {
        precondition(seriesLimit > 0, "RunLoopKitMetrics.start: seriesLimit must be at least 1")
        let bridge = MetricsBridge(factory: factory, seriesLimit: seriesLimit)
        PortMetrics.recorder = bridge
        RunLoop.instruments = bridge
    }

    /// Stops reporting: the library costs what it did before `start`.
    /// Figures already reported stay with the factory.
    public static func stop() {
        PortMetrics.recorder = nil
        RunLoop.instruments = nil
    }
}
