import CoreMetrics
import RunLoopKitCore

/// One loop's series (by its thread's name): passes, callouts by kind,
/// and its lag.
final class LoopCounters: Sendable {
    let passes: Counter
    /// How long each pass kept the loop awake (its duration less its
    /// sleep): the longest that anything which became ready during it
    /// waited for the loop.
    let lag: CoreMetrics.Timer
    /// By kind (`kindName`).
    private let callouts: SeriesTable<String, Counter>

    init(loop: String, factory: any MetricsFactory) {
        callouts = SeriesTable { kind in
            Counter(label: MetricNames.callouts, dimensions: [("loop", loop), ("kind", kind)], factory: factory)
        }
        passes = Counter(label: MetricNames.passes, dimensions: [("loop", loop)], factory: factory)
        lag = CoreMetrics.Timer(label: MetricNames.lag, dimensions: [("loop", loop)], factory: factory)
    }

    /// Counts one callout of `kind`.
    func callout(_ kind: RunLoop.CalloutKind) { callouts[Self.kindName(kind)].increment() }

    /// The kind as a label: an observer's activity is left out (one series
    /// for all observers).
    private static func kindName(_ kind: RunLoop.CalloutKind) -> String {
        if case .observer = kind { return "observer" }
        return kind.description
    }
}
