/// How a port made with `Port.Transport.tcp` is reached from other hosts
/// (S-NET-1): through this process's tcp endpoint at a bind address, shared
/// by every port made for that address and addressed behind it by port id,
/// or only through the connections this process makes (`connectingOnly`).
///
/// ```swift
/// // Listens on every IPv4 address, port 7400; descriptors say 10.0.0.1.
/// let service = try Port(transport: .tcp(.listening(on: "0.0.0.0", port: 7400, advertising: "10.0.0.1")))
/// // Reachable only over connections this process makes (behind NAT, a reply port).
/// let replies = try Port(transport: .tcp(.connectingOnly))
/// ```
///
/// Security (S-NET-2): CURVE unless `.plainText` is asked for by name; see
/// docs/ports.md, "Across machines", for the keys and who may connect.
public struct TCPEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// How a listening endpoint's connections are secured.
    public enum Security: Sendable, Hashable {
        /// CurveZMQ: encrypted, the server authenticated by its public key
        /// (carried in every descriptor) and the client by the server's
        /// authorized-keys file. The default.
        case curve
        /// No encryption and no authentication, for a network that is
        /// private by other means. Logged at every bind.
        case plainText
    }

    /// The address the endpoint binds (an IPv4 or IPv6 literal; `0.0.0.0`
    /// or `::` for every address); nil for `connectingOnly`.
    public let bindAddress: String?
    /// The tcp port; 0 for one the system picks.
    public let port: UInt16
    /// The host descriptors name, so that peers connect there: needed when
    /// the bind address is a wildcard (else the host's first non-loopback
    /// IPv4 address is advertised, or 127.0.0.1 if it has none).
    public let advertisedHost: String?
    /// CURVE or plain text.
    public let security: Security

    /// An endpoint that listens at `address` and `port` (0: one the system
    /// picks), advertising `host` in descriptors when given.
    public static func listening(
        on address: String = "0.0.0.0", port: UInt16 = 0, advertising host: String? = nil, security: Security = .curve
    ) -> TCPEndpoint {
        TCPEndpoint(bindAddress: address, port: port, advertisedHost: host, security: security)
    }

    /// No listening socket: the port is reached only over connections this
    /// process makes to other processes' endpoints, which carry both
    /// directions (a client behind NAT, a request's reply port). Passed to
    /// a process this one has no connection with, it is unreachable there.
    public static let connectingOnly = TCPEndpoint(bindAddress: nil, port: 0, advertisedHost: nil, security: .curve)

    /// Whether the endpoint listens.
    public var isListening: Bool { bindAddress != nil }

    /// `tcp://address:port` (`[address]` for IPv6), or `connecting only`.
    public var description: String {
        guard let bindAddress else { return "connecting only" }
        return TCPTransport.zeroMQEndpoint(host: advertisedHost ?? bindAddress, port: port)
            + (security == .plainText ? " (plain text)" : "")
    }
}
