import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// How a port is reached: one case per transport, and the one place that
/// says what differs between them (docs/design.md, "How a transport plugs
/// in"). The port, its receiver and send channel, the descriptor codec, the
/// registry and the name server ask the route; none of them branches on the
/// transport itself, and a new case is a compile error at every question it
/// must answer.
///
/// What a transport owns: how a new local port gets its route (`local`);
/// how its receiver listens (`bind`); the endpoint, ZeroMQ context and exit
/// flush of a sender's connection (`sendEndpoint`, `sendContext`,
/// `flushesAtExit`); what a descriptor says of it (`descriptorKind`,
/// `decoded`); whether a destination can be reached at all
/// (`reachabilityProblem`); and how the death of what is behind a
/// destination is learned (`watchOwner`, `vanished`).
enum PortRoute: Hashable, Sendable {
    /// ZeroMQ inproc: this process only (`InprocTransport`).
    case inproc
    /// ZeroMQ ipc: any process of this user on the port's host, through a
    /// socket file in the runtime directory (`IPCTransport`).
    case ipc(IPCTransport.Endpoint)
    /// ZeroMQ tcp: any process that can reach the port's process over the
    /// network, behind its endpoint (`TCPTransport`, `NetworkHub`).
    case tcp(TCPTransport.Endpoint)

    /// How far a port can be reached, and how far a destination is: a port
    /// travels in a message only to a destination within its reach (S-PORT-2).
    enum Reach: UInt8, Comparable, Sendable {
        /// This process.
        case process
        /// Every process of this user on this host.
        case host
        /// Every process with a connection to the port's process.
        case network

        static func < (lhs: Reach, rhs: Reach) -> Bool { lhs.rawValue < rhs.rawValue }

        /// The transport a port needs to be carried this far, such as a
        /// reply port made for a request.
        var transport: Port.Transport {
            switch self {
            case .process: .inproc
            case .host: .ipc
            case .network: .tcp(.connectingOnly)
            }
        }
    }

    var reach: Reach {
        switch self {
        case .inproc: .process
        case .ipc: .host
        case .tcp: .network
        }
    }

    /// The public name of the transport: the one of its reach, and for
    /// tcp where its process listens.
    var transport: Port.Transport {
        switch self {
        case .inproc, .ipc: reach.transport
        case let .tcp(endpoint): .tcp(TCPTransport.publicEndpoint(endpoint))
        }
    }

    /// Where the port listens, for diagnostics.
    var whereabouts: String {
        switch self {
        case .inproc: "(inproc)"
        case let .ipc(endpoint): "at \(endpoint.path)"
        case let .tcp(endpoint): "at \(endpoint.listener ?? "(connecting only)") instance \(endpoint.instance.shortDescription)"
        }
    }

    // MARK: - In a descriptor (docs/wire-format.md, "Port descriptor")

    /// The descriptor's transport byte.
    var descriptorKind: UInt8 {
        switch self {
        case .inproc: 0
        case .ipc: 1
        case .tcp: Self.tcpDescriptorKind
        }
    }

    /// A tcp port's transport byte (versions 3 and 4).
    static let tcpDescriptorKind: UInt8 = 2

    /// The descriptor's path, empty for none.
    var descriptorPath: String {
        switch self {
        case .inproc: ""
        case let .ipc(endpoint): endpoint.path
        case let .tcp(endpoint): endpoint.listener ?? ""
        }
    }

    /// The host a descriptor names, which makes it a version-2 descriptor.
    var descriptorHost: HostIdentity? {
        switch self {
        case .inproc, .tcp: nil
        case let .ipc(endpoint): endpoint.host
        }
    }

    /// The route a descriptor names, each length and byte checked.
    static func decoded(
        kind: UInt8, path: UnsafeRawBufferPointer, host: HostIdentity?
    ) throws(WireFormat.DecodeError) -> PortRoute {
        switch kind {
        case 0:
            guard path.isEmpty else { throw .badDescriptor("an inproc descriptor with a path") }
            guard host == nil else { throw .badDescriptor("a version-2 descriptor is always ipc (transport 1)") }
            return .inproc
        case 1:
            return .ipc(try IPCTransport.decodedEndpoint(path: path, host: host))
        case 2:
            throw .badDescriptor("a tcp port (transport 2) is described by a version-3 descriptor")
        default:
            throw .badDescriptor("unknown transport \(kind)")
        }
    }

    // MARK: - A local port

    /// The route of a new local port made with `transport`.
    static func local(_ transport: Port.Transport, portID: UInt64, process: ProcessIdentity) throws(PortError) -> PortRoute {
        switch transport {
        case .inproc:
            return .inproc
        case .ipc:
            return .ipc(try IPCTransport.newEndpoint(portID: portID, process: process))
        case let .tcp(configuration):
            return .tcp(try TCPTransport.newEndpoint(configuration))
        }
    }

    /// Makes `receiver` listen where this route says. Every receiver
    /// already listens at its inproc endpoint (`InprocTransport`), through
    /// which its own process reaches it whatever its route; a tcp port's
    /// messages come there too, forwarded by its process's endpoint.
    func bind(_ receiver: PortReceiver) throws(PortError) {
        switch self {
        case .inproc, .tcp: break
        case let .ipc(endpoint): try receiver.bindIPC(endpoint.path)
        }
    }

    // MARK: - A sender's connection

    /// The route a sender in this process takes to `address`: inproc for a
    /// port of this process, whatever its own route (the fastest way there).
    static func sending(to address: PortAddress) -> PortRoute {
        address.isInThisProcess ? .inproc : address.route
    }

    /// The endpoint a send channel connects to.
    func sendEndpoint(for address: PortAddress) -> String {
        switch self {
        case .inproc: InprocTransport.endpoint(for: address)
        case let .ipc(endpoint): IPCTransport.zeroMQEndpoint(endpoint)
        case let .tcp(endpoint): endpoint.listener ?? "(over a connection from instance \(endpoint.instance))"
        }
    }

    /// The context a send channel's socket is made in: inproc needs the
    /// receiver's (the shared one); what leaves the process goes through
    /// the context that is flushed and terminated at exit (`OutboundFlush`).
    var sendContext: ZMQContext {
        switch self {
        case .inproc: ZMQContext.shared
        case .ipc: OutboundFlush.shared.context
        case .tcp: NetworkHub.shared.context
        }
    }

    /// Whether what a channel on this route accepted must be written before
    /// the process exits (S-PORT-4's exit bound): true for what leaves the
    /// process. Such a channel sends even its smallest frames from its pool,
    /// so that it can count what libzmq has not written yet. (tcp's
    /// connections are the network hub's, which flushes them itself.)
    var flushesAtExit: Bool {
        switch self {
        case .inproc, .tcp: false
        case .ipc: true
        }
    }

    /// Why `address` cannot be reached from this process at all, or nil
    /// (S-PORT-8): decided on the first send, never while a message is decoded.
    func reachabilityProblem(_ address: PortAddress) -> PortError? {
        switch self {
        case .inproc: InprocTransport.reachabilityProblem(address)
        case let .ipc(endpoint): IPCTransport.reachabilityProblem(address, endpoint)
        case let .tcp(endpoint): TCPTransport.reachabilityProblem(address, endpoint)
        }
    }

    // MARK: - A peer's death

    /// Starts learning of the death of what is behind `address`, a port of
    /// another process (S-PORT-5): its ports are invalidated then
    /// (`PortRegistry.processExited`). On one host that is the owner
    /// process's exit (a pidfd, `ProcessWatcher`), for an inproc claim of
    /// another process as well. Over tcp it is the connection's end
    /// (`NetworkHub`), never a pid, which means nothing on another host.
    func watchOwner(of address: PortAddress) {
        switch self {
        case .inproc, .ipc: ProcessWatcher.shared.watch(address.process)
        case .tcp: break
        }
    }

    /// Checked while a send waits for room: the destination is gone for
    /// good (`.invalidPort` if its process lives and closed it,
    /// `.peerDied` if the process died), or nil.
    func vanished(_ address: PortAddress, described description: String) -> PortError? {
        switch self {
        case .inproc: nil  // a local port's invalidation reaches its send rights directly
        case let .ipc(endpoint): IPCTransport.vanished(address, endpoint, described: description)
        case .tcp: nil  // a tcp send waits in its connection, which fails it when it breaks (`TCPConnection`)
        }
    }
}
