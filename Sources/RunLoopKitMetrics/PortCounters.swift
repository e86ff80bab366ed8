import CoreMetrics
import RunLoopKitPorts

/// One port's series (a port's name and its peer): its counters, made once;
/// those of drops and failed sends made per reason as the reasons come.
final class PortCounters: PortMetricsSeries {
    struct Key: Hashable, Sendable {
        let port: String
        let peer: String
    }

    private let sentCounter: Counter
    private let deliveredCounter: Counter
    private let drops: SeriesTable<PortDropReason, Counter>
    /// By the failed send's `PortError` case.
    private let failures: SeriesTable<String, Counter>

    init(_ key: Key, factory: any MetricsFactory) {
        sentCounter = Counter(label: MetricNames.sent, dimensions: [("port", key.port), ("peer", key.peer)], factory: factory)
        deliveredCounter = Counter(label: MetricNames.delivered, dimensions: [("port", key.port)], factory: factory)
        drops = SeriesTable { reason in
            Counter(label: MetricNames.dropped, dimensions: [("port", key.port), ("reason", reason.caseName)], factory: factory)
        }
        failures = SeriesTable { reason in
            Counter(label: MetricNames.sendFailures, dimensions: [("port", key.port), ("peer", key.peer), ("reason", reason)], factory: factory)
        }
    }

    func sent(_ count: Int) { sentCounter.increment(by: count) }

    func delivered(_ count: Int) { deliveredCounter.increment(by: count) }

    func dropped(_ reason: PortDropReason) { drops[reason].increment() }

    func sendFailed(_ error: PortError) { failures[error.caseName].increment() }
}
