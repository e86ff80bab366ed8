import CoreMetrics
@_spi(RunLoopKitInternals) import RunLoopKitCore
import RunLoopKitPorts

/// What `RunLoopKitMetrics.start` attaches: the ports' recorder and the
/// loops' instruments, reporting to one factory.
final class MetricsBridge: PortMetricsRecorder, RunLoopMonitor {
    private let ports: SeriesTable<PortCounters.Key, PortCounters>
    private let loops: SeriesTable<String, LoopCounters>
    private let peers: SeriesTable<String, PeerCounters>
    private let tapEvents: Counter
    private let tapDropped: Counter
    /// The tap's totals last reported, to count what came since.
    private let tapReported = Locked<(produced: UInt64, dropped: UInt64)>((0, 0))

    init(factory: any MetricsFactory, seriesLimit: Int) {
        ports = SeriesTable(limit: (seriesLimit, .init(port: MetricNames.other, peer: MetricNames.other))) {
            PortCounters($0, factory: factory)
        }
        loops = SeriesTable(limit: (seriesLimit, MetricNames.other)) { LoopCounters(loop: $0, factory: factory) }
        peers = SeriesTable(limit: (seriesLimit, MetricNames.other)) { PeerCounters(peer: $0, factory: factory) }
        tapEvents = Counter(label: MetricNames.tapEvents, factory: factory)
        tapDropped = Counter(label: MetricNames.tapDropped, factory: factory)
    }

    // MARK: - Ports

    func series(port: String, peer: String?) -> any PortMetricsSeries {
        ports[.init(port: port, peer: peer ?? MetricNames.local)]
    }

    func tap(produced: UInt64, dropped: UInt64) {
        let (newEvents, newDrops) = tapReported.withLock { last -> (UInt64, UInt64) in
            let delta = (produced > last.produced ? produced - last.produced : 0,
                         dropped > last.dropped ? dropped - last.dropped : 0)
            last = (max(last.produced, produced), max(last.dropped, dropped))
            return delta
        }
        if newEvents > 0 { tapEvents.increment(by: Int64(clamping: newEvents)) }
        if newDrops > 0 { tapDropped.increment(by: Int64(clamping: newDrops)) }
    }

    func connectionOpened(peer: String) { peers[peer].opened.increment() }

    func connectionEnded(peer: String, reason: TCPConnectionEnd) { peers[peer].ended(reason) }

    // MARK: - Loops

    func runLoop(_ loop: RunLoop, didFinish pass: RunLoop.PassReport) {
        let counters = loops[pass.threadName]
        counters.passes.increment()
        let awake = pass.durationNanoseconds > pass.sleptNanoseconds ? pass.durationNanoseconds - pass.sleptNanoseconds : 0
        counters.lag.recordNanoseconds(Int64(clamping: awake))
    }

    func runLoop(_ loop: RunLoop, didFinish callout: RunLoop.CalloutReport) {
        loops[callout.threadName].callout(callout.kind)
    }
}
