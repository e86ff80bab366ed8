import Glibc
import Logging
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// This process's tcp endpoint at one bind address (S-NET-1): one ROUTER
/// socket, however many ports are reachable behind it (a message names its
/// port by id), accepting connections that carry both directions. CURVE
/// unless plain text was asked for by name (S-NET-2): the context's ZAP
/// handler runs before the socket binds, so no client is ever let in
/// unchecked.
final class TCPListener: @unchecked Sendable {
    /// The ROUTER, under `lock` (senders replying on accepted connections,
    /// and the network thread reading).
    let socket: Socket
    let lock = Lock()
    /// Read by the network thread only.
    let monitor: SocketMonitor
    /// The socket's reading side.
    let inbound: TCPInbound
    /// What the ports' descriptors carry: `tcp://host:port`.
    let advertisedEndpoint: String
    /// The bound endpoint, as libzmq reports it.
    let boundEndpoint: String
    /// The server's CURVE public key; nil for plain text.
    let serverKey: CurveKey?
    /// Its place among the process's listeners, in the order they were
    /// made: where the process's home frame lists it (`TCPHome`).
    let position: Int
    private static let logger = Logger(label: "RunLoopKit.Network")

    init(_ configuration: TCPEndpoint, context: ZMQContext, keys: CurveKeyPair?, position: Int) throws(PortError) {
        self.position = position
        guard let address = configuration.bindAddress else { preconditionFailure("a listener for an endpoint that does not listen") }
        do {
            socket = try context.makeSocket(.router)
            try NetworkHub.applyConnectionOptions(to: socket)
            try socket.setRouterMandatory(true)
            if address.contains(":") { try socket.setIPv6(true) }
            if let keys {
                try socket.setCurveServer(keys)
            }
            // The ZAP handler sees plain-text connections too, for the log.
            try socket.setZAPDomain(keys == nil ? NetworkHub.plainTextDomain : NetworkHub.curveDomain)
            monitor = try SocketMonitor(watching: socket, in: context)
        } catch {
            throw .zeroMQ(error)
        }
        let requested = TCPTransport.zeroMQEndpoint(host: address, port: configuration.port)
        do {
            try socket.bind(requested)
        } catch {
            socket.close()
            throw .unreachable(requested, reason: "cannot listen there: \(error)")
        }
        do { inbound = try TCPInbound(hub: NetworkHub.shared, socket: socket, socketLock: lock) } catch {
            socket.close()
            throw .zeroMQ(error)
        }
        boundEndpoint = socket.lastEndpoint ?? requested
        let port = TCPTransport.hostAndPort(boundEndpoint)?.port ?? configuration.port
        let host = configuration.advertisedHost ?? (Self.isWildcard(address) ? Self.firstNonLoopbackAddress() : address)
        advertisedEndpoint = TCPTransport.zeroMQEndpoint(host: host, port: port)
        serverKey = keys?.publicKey
        socket.releaseOwnership()
        inbound.attach(listener: self)
        if keys == nil {
            Self.logger.warning("tcp endpoint \(boundEndpoint) listens in PLAIN TEXT, as asked (TCPEndpoint.Security.plainText): no encryption, and any client may connect")
        } else {
            Self.logger.info("tcp endpoint \(boundEndpoint) listens (CURVE), advertised as \(advertisedEndpoint)")
        }
    }

    /// 0.0.0.0, ::, or *: every address of the host.
    static func isWildcard(_ address: String) -> Bool { ["0.0.0.0", "::", "*", "[::]"].contains(address) }

    /// The host's first non-loopback IPv4 address of an interface that is
    /// up, or 127.0.0.1: what a wildcard endpoint advertises unless told.
    static func firstNonLoopbackAddress() -> String {
        var list: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&list) == 0, let first = list else { return "127.0.0.1" }
        defer { freeifaddrs(first) }
        var entry: UnsafeMutablePointer<ifaddrs>? = first
        while let current = entry {
            defer { entry = current.pointee.ifa_next }
            let flags = Int32(current.pointee.ifa_flags)
            guard let address = current.pointee.ifa_addr, address.pointee.sa_family == sa_family_t(AF_INET),
                  flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0 else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            let found: Bool = address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { ipv4 in
                var raw = ipv4.pointee.sin_addr
                return inet_ntop(AF_INET, &raw, &text, socklen_t(text.count)) != nil
            }
            if found { return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) }
        }
        return "127.0.0.1"
    }

    /// Closes the socket and its monitor with `lingerMilliseconds` for what
    /// it accepted (exit). Network thread.
    func close(lingerMilliseconds: Int32) {
        lock.withLock {
            try? SocketMonitor.stop(monitoring: socket)
            try? socket.setLinger(milliseconds: lingerMilliseconds)
            socket.close()
        }
        monitor.close()
        inbound.discardHeld()
    }
}
