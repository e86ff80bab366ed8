internal import CZeroMQ

/// Socket options for tcp between hosts (`man zmq_setsockopt`): set before
/// `bind` or `connect`, as libzmq applies them to connections made after.
///
/// Thread rules for every member: owner thread (see ``Socket``).
extension Socket {
    /// Heartbeats (`ZMQ_HEARTBEAT_IVL`, `ZMQ_HEARTBEAT_TIMEOUT`,
    /// `ZMQ_HEARTBEAT_TTL`): a ZMTP PING every `interval`; a connection that
    /// stays silent for `timeout` after one is closed (the monitor reports
    /// it disconnected); `ttl` asks the peer to close it after that long
    /// without traffic from this side (libzmq counts it in tenths of a
    /// second). Each is whole milliseconds; 0 turns it off.
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setHeartbeat(interval: Duration, timeout: Duration, ttl: Duration) throws(ZMQError) {
        try setOption(ZMQ_HEARTBEAT_IVL, Self.milliseconds(interval))
        try setOption(ZMQ_HEARTBEAT_TIMEOUT, Self.milliseconds(timeout))
        try setOption(ZMQ_HEARTBEAT_TTL, Self.milliseconds(ttl))
    }

    /// Whether a ROUTER refuses a message for a routing id it has no
    /// connection to (`ZMQ_ROUTER_MANDATORY`): the send throws
    /// `EHOSTUNREACH` instead of dropping it, and a full peer makes a
    /// non-blocking send return false instead of dropping.
    /// - Throws: ``ZMQError`` (`EINVAL` on another socket type, `ENOTSOCK`).
    public func setRouterMandatory(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_ROUTER_MANDATORY, Int32(on ? 1 : 0))
    }

    /// How long a ZMTP handshake (CURVE included) may take before the
    /// connection is closed (`ZMQ_HANDSHAKE_IVL`, whole milliseconds; 0: no limit).
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setHandshakeInterval(_ interval: Duration) throws(ZMQError) {
        try setOption(ZMQ_HANDSHAKE_IVL, Self.milliseconds(interval))
    }

    /// Whether the socket uses IPv6 as well as IPv4 (`ZMQ_IPV6`): needed to
    /// bind or connect to an IPv6 address.
    /// - Throws: ``ZMQError`` (`ENOTSOCK`).
    public func setIPv6(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_IPV6, Int32(on ? 1 : 0))
    }

    /// The ZAP domain of the socket's connections (`ZMQ_ZAP_DOMAIN`): a
    /// server's ZAP handler sees it in each request. With a domain set,
    /// libzmq asks the handler about plain (NULL) connections too.
    /// - Throws: ``ZMQError`` (`EINVAL` over 254 bytes, `ENOTSOCK`).
    public func setZAPDomain(_ domain: String) throws(ZMQError) {
        let bytes = Array(domain.utf8)
        let outcome: Result<Void, ZMQError> = bytes.withUnsafeBytes { raw in
            Result { () throws(ZMQError) in try setOption(ZMQ_ZAP_DOMAIN, bytes: raw) }
        }
        try outcome.get()
    }

    /// How long after a connection ends libzmq connects again
    /// (`ZMQ_RECONNECT_IVL`, whole milliseconds); nil never: a connection
    /// that ended stays ended.
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setReconnectInterval(_ interval: Duration?) throws(ZMQError) {
        try setOption(ZMQ_RECONNECT_IVL, interval.map(Self.milliseconds) ?? -1)
    }

    /// Whether the kernel's TCP keepalive probes the connection (`ZMQ_TCP_KEEPALIVE`).
    /// - Throws: ``ZMQError`` (`ENOTSOCK`).
    public func setTCPKeepalive(_ on: Bool) throws(ZMQError) {
        try setOption(ZMQ_TCP_KEEPALIVE, Int32(on ? 1 : 0))
    }

    static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: max(0, seconds) &* 1000 &+ max(0, attoseconds) / 1_000_000_000_000_000)
    }
}
