import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A port's series in the attached metrics recorder (`PortMetrics`), made
/// on its first figure and again when its name or the recorder changes.
final class PortMetricsBinding: Sendable {
    let recorderGeneration: UInt32
    let nameGeneration: UInt32
    let series: any PortMetricsSeries

    init(recorderGeneration: UInt32, nameGeneration: UInt32, series: any PortMetricsSeries) {
        self.recorderGeneration = recorderGeneration
        self.nameGeneration = nameGeneration
        self.series = series
    }
}

extension Port {
    /// The port as metrics name it: the name it is registered or was
    /// looked up under, else "unnamed" (reply ports above all: one series
    /// for all, not one each).
    var metricsLabel: String { knownName ?? "unnamed" }

    /// For a send right to a tcp port of another process, the address its
    /// messages go to (the peer's listener); nil otherwise. Never the
    /// instance: a restarted peer is the same series.
    var metricsPeer: String? {
        guard let endpoint = address.tcpEndpoint, !address.isInThisProcess else { return nil }
        return endpoint.listener ?? "connecting only"
    }

    /// This port's series in the attached recorder, nil if none is
    /// attached. Takes the port's lock: called only once `PortMetrics.attached`
    /// was seen true.
    func metricsSeries() -> (any PortMetricsSeries)? {
        guard let recorder = PortMetrics.current else { return nil }
        let generation = PortMetrics.generation.load(ordering: .acquiring)
        let nameGeneration = tapNameGeneration.load(ordering: .acquiring)
        if let binding = state.withLock({ $0.metrics }), binding.recorderGeneration == generation,
           binding.nameGeneration == nameGeneration {
            return binding.series
        }
        // Asked with no lock held: the recorder is a bridge to the program's metrics backend.
        let binding = PortMetricsBinding(
            recorderGeneration: generation, nameGeneration: nameGeneration,
            series: recorder.series(port: metricsLabel, peer: metricsPeer))
        state.withLock { $0.metrics = binding }
        return binding.series
    }

    /// `count` messages were delivered in one callout.
    func metricsDelivered(_ count: Int) {
        metricsSeries()?.delivered(count)
    }
}
