/// The metrics' names (labels, in swift-metrics' words) and dimensions:
/// docs/metrics.md lists them with what each counts.
enum MetricNames {
    static let sent = "runloopkit_port_messages_sent_total"
    static let delivered = "runloopkit_port_messages_delivered_total"
    static let dropped = "runloopkit_port_messages_dropped_total"
    static let sendFailures = "runloopkit_port_send_failures_total"
    static let passes = "runloopkit_loop_passes_total"
    static let callouts = "runloopkit_loop_callouts_total"
    static let lag = "runloopkit_loop_lag_seconds"
    static let tapEvents = "runloopkit_tap_events_total"
    static let tapDropped = "runloopkit_tap_dropped_events_total"
    static let connectionsOpened = "runloopkit_tcp_connections_opened_total"
    static let connectionsEnded = "runloopkit_tcp_connections_ended_total"

    /// The value of every dimension of a series past the limit.
    static let other = "other"
    /// The peer of a port that is not reached over tcp.
    static let local = "local"
}
