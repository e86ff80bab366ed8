import CoreMetrics
import Synchronization
import RunLoopKitPorts

/// One tcp peer's series (by address, never by instance: a restarted
/// process is the same series): connections opened, and ended by reason.
final class PeerCounters: Sendable {
    let opened: Counter
    private let endings: [TCPConnectionEnd: Counter]

    init(peer: String, factory: any MetricsFactory) {
        opened = Counter(label: MetricNames.connectionsOpened, dimensions: [("peer", peer)], factory: factory)
        var endings: [TCPConnectionEnd: Counter] = [:]
        for reason in TCPConnectionEnd.allCases {
            endings[reason] = Counter(
                label: MetricNames.connectionsEnded, dimensions: [("peer", peer), ("reason", reason.rawValue)], factory: factory)
        }
        self.endings = endings
    }

    func ended(_ reason: TCPConnectionEnd) { endings[reason]?.increment() }
}
