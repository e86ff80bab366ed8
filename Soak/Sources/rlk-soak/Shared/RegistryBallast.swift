import RunLoopKit

/// Brings RunLoopKit's cache of recent send rights to the same state at
/// every checkpoint. The port registry keeps the last 64 send rights it
/// resolved alive (so that a reply port dropped after each reply does not
/// reconnect every time), each with its send channel: a libzmq socket (an
/// eventfd) and, while connected, its connection. Which 64 they are
/// depends on the traffic, so two quiet states would differ by whatever
/// the cache held. Looking up more fresh names than the cache holds fills
/// it with send rights that were never sent to (no channel, no fd), the
/// same at every checkpoint.
///
/// A receiving port has a smaller cache of the same kind, of the ports
/// named by the descriptors it received lately: only the coordinator's
/// control port receives any (the children's hellos carry their control
/// ports), so the first child also sends it messages whose reply ports are
/// ballast.
///
/// A process cannot resolve a send right to its own ports (they come back
/// as themselves), so the ballast is hosted by another process: the
/// coordinator's for the children, the first child's (never killed) for
/// the coordinator.
final class RegistryBallast: Sendable {
    /// More than the cache holds (64), so that every entry is replaced.
    static let size = 80

    /// More than a receiving port's cache of the descriptors it was sent
    /// lately (8), which holds their send rights and channels too.
    static let descriptorCacheFill = 16

    let names: [String]
    let ports: [Port]

    /// Registers `size` fresh names, unique to `tag`.
    init(tag: String) throws {
        var names: [String] = []
        var ports: [Port] = []
        for index in 0..<Self.size {
            let port = try Port(transport: .ipc)
            let name = "\(tag)-\(index)"
            try PortNameServer.register(port, name: name)
            names.append(name)
            ports.append(port)
        }
        self.names = names
        self.ports = ports
    }

    /// Resolves every name once and lets the send rights go (the cache keeps them).
    static func lookUp(_ names: [String]) throws {
        for name in names { _ = try PortNameServer.lookup(name, timeout: .seconds(5)) }
    }

    func invalidate() { for port in ports { port.invalidate() } }
}
