/// The bounds of tcp (S-PORT-4, S-NET-3; docs/ports.md, "Across machines").
extension Port {
    /// How long a send waits for a tcp connection (one not made yet, a
    /// handshake that does not finish, a key refused) before it fails as
    /// `.unreachable`, whatever its deadline: 3 s by default, or the
    /// seconds in `RUNLOOPKIT_TCP_CONNECTION_BOUND` when the process
    /// starts. inproc and ipc keep `connectionBound`. Any thread; applies
    /// to connections made afterwards.
    public static var tcpConnectionBound: Duration {
        get { .nanoseconds(Int64(clamping: NetworkHub.connectionBoundNanoseconds)) }
        set { NetworkHub.connectionBound.store(nanoseconds(newValue, atLeast: 1_000_000), ordering: .relaxed) }
    }

    /// How long a tcp connection may stay silent before its peer is taken
    /// for dead (ZMQ_HEARTBEAT_TIMEOUT): 10 s by default, or the seconds in
    /// `RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT` when the process starts.
    /// Heartbeats go every quarter of it, so a remote port whose process,
    /// host or link died is invalid within 1.25 times it (12.5 s by
    /// default), and requests waiting on it fail with
    /// `PortError.connectionLost`. At least 0.1 s and at most 6,553 s (the
    /// longest heartbeat libzmq carries); a value outside is taken as the
    /// nearer bound. Any thread; applies to connections made afterwards.
    public static var tcpHeartbeatTimeout: Duration {
        get { .nanoseconds(Int64(clamping: NetworkHub.heartbeatTimeoutNanoseconds)) }
        set {
            let wanted = nanoseconds(newValue, atLeast: 0)
            NetworkHub.heartbeatTimeout.store(NetworkHub.heartbeatTimeout(clamping: wanted), ordering: .relaxed)
        }
    }

    private static func nanoseconds(_ duration: Duration, atLeast floor: UInt64) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        let value = max(0, seconds) &* 1_000_000_000 &+ max(0, attoseconds / 1_000_000_000)
        return max(UInt64(value), floor)
    }
}

extension Port {
    /// The descriptor a message over a tcp connection carries for this
    /// port: its version-4 descriptor when it is a tcp port of this
    /// process and the connection's peer reads version 4 of this process's
    /// endpoint (`TCPConnection.relativeLimit`: 0 when it reads none, else
    /// one more than the endpoints this process's home frame listed to it);
    /// else its full descriptor.
    @inline(__always)
    func descriptorBytes(relativeLimit: UInt16) -> [UInt8] {
        guard let relative = relativeDescriptor, Self.peerReads(relative, relativeLimit: relativeLimit) else { return descriptorBytes }
        return relative
    }

    /// Whether a peer whose connection has `relativeLimit` reads the
    /// version-4 descriptor `relative` (of a port of this process).
    @inline(__always)
    static func peerReads(_ relative: [UInt8], relativeLimit: UInt16) -> Bool {
        guard relativeLimit != 0 else { return false }
        let position = relative[6]
        return position == WireFormat.noListener || UInt16(position) &+ 1 < relativeLimit
    }

    /// The port's descriptor (docs/wire-format.md, "Port descriptor"): what
    /// a message carries for it, for tools and tests that pass a port by
    /// other means.
    package var descriptor: [UInt8] { descriptorBytes }

    /// The port a descriptor names (a send right, or this process's own
    /// port), as if it had arrived in a message: reachability is decided
    /// on its first send (S-PORT-8).
    package static func fromDescriptor(_ bytes: [UInt8]) throws(PortError) -> Port {
        let address: PortAddress
        do {
            address = try bytes.withUnsafeBytes { (raw) throws(WireFormat.DecodeError) -> PortAddress in
                try WireFormat.decodeDescriptor(raw)
            }
        } catch {
            throw .invalidPort("not a port descriptor: \(error)")
        }
        return resolve(address)
    }
}

extension Port {
    /// What this process's tcp endpoints dropped instead of handing to a
    /// port, per reason (S-NET-1, S-PORT-7): messages meant for another
    /// process instance (`wrongInstance`: for a process that listened at
    /// the address before), for a port id this process has no tcp port
    /// with, or with no destination (`noSuchPort`), and malformed ones
    /// (their reasons, as a port counts them). Logged as a port's drops
    /// are, under the name "tcp endpoint". Any thread.
    public static var tcpEndpointDropCounts: PortDropCounts { NetworkHub.shared.drops.counts }
}
