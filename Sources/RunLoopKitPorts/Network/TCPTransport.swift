import Glibc
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// ZeroMQ tcp, between hosts (S-NET-1): a port is reached behind its
/// process's endpoint (one ROUTER socket per bind address, `TCPListener`)
/// by its port id, over one two-way connection per remote process
/// (`TCPConnection`), secured with CURVE unless plain text was asked for
/// (S-NET-2). A remote port is named by its process's instance, never a
/// pid, and its death is learned from the connection (S-NET-3), never
/// from a local check.
enum TCPTransport {
    /// Where a tcp port is reached: its process's instance, the endpoint
    /// its process listens at (nil for a process that only connects), and
    /// that endpoint's CURVE public key (nil for plain text).
    struct Endpoint: Hashable, Sendable {
        let instance: ProcessInstance
        /// `tcp://host:port`, as descriptors carry it.
        let listener: String?
        let serverKey: CurveKey?
    }

    /// The descriptor's security byte.
    static let securityPlain: UInt8 = 0
    static let securityCurve: UInt8 = 1
    /// The longest endpoint text a descriptor carries.
    static let maxEndpointBytes = 255

    /// `tcp://host:port`, with an IPv6 host in brackets.
    static func zeroMQEndpoint(host: String, port: UInt16) -> String {
        host.contains(":") ? "tcp://[\(host)]:\(port)" : "tcp://\(host):\(port)"
    }

    /// The host and port of `tcp://host:port` (`[host]` for IPv6).
    static func hostAndPort(_ endpoint: String) -> (host: String, port: UInt16)? {
        guard endpoint.hasPrefix("tcp://"), let colon = endpoint.lastIndex(of: ":") else { return nil }
        let hostStart = endpoint.index(endpoint.startIndex, offsetBy: 6)
        // `tcp://host` has no port: its last colon is the scheme's.
        guard colon >= hostStart else { return nil }
        var host = endpoint[hostStart..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard let port = UInt16(endpoint[endpoint.index(after: colon)...]), !host.isEmpty else { return nil }
        return (String(host), port)
    }

    /// `endpoint` as descriptors carry it, `tcp://host:port`: given so, or
    /// as `host:port` (`[host]:port` for IPv6).
    static func listenerEndpoint(_ endpoint: String) throws(PortError) -> String {
        let full = endpoint.hasPrefix("tcp://") ? endpoint : "tcp://" + endpoint
        guard let (host, port) = hostAndPort(full), port > 0, full.utf8.count <= maxEndpointBytes,
              full.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F })
        else {
            throw .unreachable(endpoint, reason: "not a tcp endpoint: write tcp://host:port, or tcp://[address]:port for IPv6")
        }
        return zeroMQEndpoint(host: host, port: port)
    }

    /// What `Port.transport` says of a tcp port: where its process listens.
    static func publicEndpoint(_ endpoint: Endpoint) -> TCPEndpoint {
        guard let listener = endpoint.listener, let (host, port) = hostAndPort(listener) else { return .connectingOnly }
        return .listening(on: host, port: port, advertising: host, security: endpoint.serverKey == nil ? .plainText : .curve)
    }

    /// A new local port's endpoint: this process's instance, and the
    /// listener for `configuration` (bound now if it is the first port for
    /// its bind address).
    static func newEndpoint(_ configuration: TCPEndpoint) throws(PortError) -> Endpoint {
        guard configuration.isListening else {
            return Endpoint(instance: .current, listener: nil, serverKey: nil)
        }
        let listener = try NetworkHub.shared.listener(for: configuration)
        return Endpoint(instance: .current, listener: listener.advertisedEndpoint, serverKey: listener.serverKey)
    }

    /// A local tcp port's version-4 descriptor: its id, and its endpoint's
    /// position among this process's listeners (`noListener` for a port
    /// behind none); nil for any other port, or one whose listener has no
    /// position (past the 254 a home frame lists).
    static func relativeDescriptor(of address: PortAddress) -> [UInt8]? {
        guard case let .tcp(endpoint) = address.route, endpoint.instance == .current else { return nil }
        var position = WireFormat.noListener
        if let listener = endpoint.listener {
            guard let found = NetworkHub.shared.listenerPosition(advertising: listener, serverKey: endpoint.serverKey) else { return nil }
            position = found
        }
        return WireFormat.encodeRelativeDescriptor(portID: address.portID, listener: position)
    }

    /// A descriptor's endpoint text: empty (a process that only connects),
    /// or `tcp://` and a host and a port other than 0 in printable ASCII.
    static func decodedListener(_ bytes: UnsafeRawBufferPointer) throws(WireFormat.DecodeError) -> String? {
        if bytes.isEmpty { return nil }
        guard bytes.count <= maxEndpointBytes, bytes.allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
              let text = String(validating: bytes, as: UTF8.self), let (_, port) = hostAndPort(text), port > 0
        else {
            throw .badDescriptor("tcp endpoint is not tcp://host:port (port 1 to 65535) in printable ASCII of at most \(maxEndpointBytes) bytes")
        }
        return text
    }

    /// What can be told at once (S-PORT-8): a port of a process with no
    /// listener and no connection to this one. A connection's failures (no
    /// answer, a handshake that does not finish, a wrong key, another
    /// instance at the address) come from the connection, within the tcp
    /// connection bound.
    static func reachabilityProblem(_ address: PortAddress, _ endpoint: Endpoint) -> PortError? {
        if address.isInThisProcess { return nil }
        return NetworkHub.shared.reachabilityProblem(address, endpoint)
    }
}

extension PortAddress {
    /// The tcp endpoint of a tcp port, else nil.
    var tcpEndpoint: TCPTransport.Endpoint? {
        if case let .tcp(endpoint) = route { endpoint } else { nil }
    }
}
