import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What the ports count for a metrics library: the hooks a bridge
/// (RunLoopKitMetrics, to swift-metrics) attaches to. With none attached,
/// each hook on the message path is one relaxed load and a branch
/// (docs/metrics.md, "What it costs").
package enum PortMetrics {
    /// Whether a recorder is attached: what every hook reads first.
    package static let attached = Atomic<Bool>(false)
    /// Bumped by each attach, so that a port's series, made for the
    /// recorder before, is made again for the new one.
    static let generation = Atomic<UInt32>(0)
    private static let storage = Locked<(any PortMetricsRecorder)?>(nil)

    /// The recorder every hook reports to; nil detaches.
    package static var recorder: (any PortMetricsRecorder)? {
        get { storage.withLock { $0 } }
        set {
            storage.withLock { recorder in
                recorder = newValue
                generation.wrappingAdd(1, ordering: .releasing)
                attached.store(newValue != nil, ordering: .releasing)
            }
        }
    }

    /// The recorder, if one is attached (read after `attached`).
    static var current: (any PortMetricsRecorder)? {
        attached.load(ordering: .relaxed) ? storage.withLock { $0 } : nil
    }
}

/// What a bridge does with the ports' figures. Its methods run on the
/// threads that send, deliver and read the network, many at once, with no
/// library lock held: they must be quick and thread-safe.
package protocol PortMetricsRecorder: AnyObject, Sendable {
    /// The series of a port: named `port` (the name it is registered or
    /// was looked up under, or `unnamed`), and for a send right to a port
    /// of another host, `peer`, the address of its connection. Asked once
    /// per port and name.
    func series(port: String, peer: String?) -> any PortMetricsSeries
    /// The tap's totals so far: events numbered, and events dropped (by
    /// its ring, or on the way to readers). On the tap's thread.
    func tap(produced: UInt64, dropped: UInt64)
    /// A tcp connection to `peer` (the address its peer listens at, or for
    /// a connection accepted here, the peer's host) is open: its hello
    /// and welcome were exchanged.
    func connectionOpened(peer: String)
    /// A tcp connection to `peer` ended, for `reason`.
    func connectionEnded(peer: String, reason: TCPConnectionEnd)
}

/// One port's counters in a bridge.
package protocol PortMetricsSeries: AnyObject, Sendable {
    /// `count` messages were sent (accepted by the transport).
    func sent(_ count: Int)
    /// `count` messages were handed to the port's handler.
    func delivered(_ count: Int)
    /// A message was dropped (S-PORT-7).
    func dropped(_ reason: PortDropReason)
    /// A send failed and threw `error`.
    func sendFailed(_ error: PortError)
}

/// Why a tcp connection ended, as metrics count it. libzmq reports a peer
/// that closed and heartbeats that stopped alike (a disconnect), so both
/// are `.lost`.
package enum TCPConnectionEnd: String, Sendable, CaseIterable {
    /// The peer closed it, or its heartbeats stopped (process, host or link gone).
    case lost
    /// The security handshake failed: a key refused, a wrong server key,
    /// plain text against CURVE.
    case handshakeFailed = "handshake_failed"
    /// No connection within the tcp connection bound.
    case connectionBound = "connection_bound"
    /// The peer's key was revoked (authorized keys).
    case keyRevoked = "key_revoked"
    /// Another process listens at the address now.
    case replaced
    /// Closed by this process: a spare connection, a sender that gave up.
    case closed
}
