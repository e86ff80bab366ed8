import Foundation
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

extension PortNameServer {
    /// How a process that serves names over tcp proves who it is: the
    /// public key of its CURVE key pair (its `curve.pub`, 40 characters of
    /// Z85), or nothing, for an endpoint made plain text by name.
    public enum ServerIdentity: Sendable, Hashable {
        /// The server's CURVE public key: the handshake fails unless the
        /// process at the endpoint holds the matching secret key (S-NET-2).
        case curve(publicKey: String)
        /// An endpoint made `TCPEndpoint.Security.plainText`: no
        /// encryption, and no proof of who answers.
        case plainText
    }

    /// A send right to the tcp port that the process listening at
    /// `endpoint`, on another host or on this one, registered under `name`
    /// (S-NET-4, NSSocketPortNameServer's role).
    ///
    /// Every process with a tcp endpoint answers lookups there of the names
    /// it registered for tcp ports (`register(_:name:)`); an ipc or inproc
    /// port's name is not served over tcp. The lookup travels like any tcp
    /// message, secured the same way: this process's key must be in the
    /// server's authorized-keys file. Each lookup asks the process that
    /// listens at the endpoint now, so that a server restarted under the
    /// same name is found again (its old send rights stay invalid, S-NET-3).
    ///
    /// ```swift
    /// let jobs = try PortNameServer.lookup(
    ///     "jobs", at: "tcp://10.0.0.2:7000",
    ///     server: .curve(publicKey: "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"))
    /// ```
    /// - Parameters:
    ///   - name: the name the server registered.
    ///   - endpoint: `tcp://host:port` (IPv6 as `tcp://[::1]:7000`), or
    ///     `host:port`: where the server listens.
    ///   - server: its public key, or `.plainText`.
    ///   - timeout: how long the whole lookup may take. Connecting is
    ///     bounded by `Port.tcpConnectionBound` (3 s) within it.
    /// - Throws: `.nameNotFound` if the process there serves no tcp port
    ///   under `name`; `.unreachable` if no process answers at the endpoint
    ///   within the connection bound (none listens, the handshake does not
    ///   finish, the keys do not match); `.connectionLost` if the
    ///   connection breaks meanwhile; `.timedOut`; `.invalidName`;
    ///   `.keyFile` for a malformed `publicKey`.
    public static func lookup(
        _ name: String, at endpoint: String, server: ServerIdentity, timeout: Duration = .seconds(5)
    ) throws(PortError) -> Port {
        try validate(name)
        let listener = try TCPTransport.listenerEndpoint(endpoint)
        let serverKey: CurveKey?
        switch server {
        case let .curve(text):
            do { serverKey = try CurveKey(z85: text) } catch {
                throw .keyFile(path: "(the server key for \(listener))", reason: "not a CURVE public key (40 characters of Z85): \(error)")
            }
        case .plainText:
            serverKey = nil
        }
        let deadline: UInt64
        do { deadline = try MonotonicClock.instant(after: timeout, "lookup timeout") } catch { throw .runLoop(error) }
        let described = "the name service at \(listener)"
        let hub = NetworkHub.shared
        let connection = try hub.connection(toWhoeverListensAt: listener, serverKey: serverKey, port: described)
        defer { hub.closeIfSpare(connection) }
        let unknown = PortAddress(
            pid: 1, startTime: 0, portID: TCPNameService.portID,
            route: .tcp(TCPTransport.Endpoint(instance: .any, listener: listener, serverKey: serverKey)))
        try connection.waitUntilReady(port: unknown)
        // The welcome said who listens there: its name service is port 0 of that instance.
        let service = Port.resolve(PortAddress(
            pid: 1, startTime: 0, portID: TCPNameService.portID,
            route: .tcp(TCPTransport.Endpoint(instance: connection.peer, listener: listener, serverKey: serverKey))))
        let left = Double(deadline &- min(MonotonicClock.now(), deadline)) / 1e9
        guard left > 0 else {
            throw .timedOut(TimeoutError(operation: "lookup of '\(name)' at \(listener)", limit: timeout))
        }
        let reply = try service.sendRequest(
            msgid: TCPNameService.Msgid.lookup, components: [.data(Data(name.utf8))], sendTimeout: left, receiveTimeout: left)
        switch reply.msgid {
        case TCPNameService.Msgid.found:
            guard case let .port(port)? = reply.components.first, reply.components.count == 1 else { break }
            port.noteLookedUp(as: name)
            return port
        case TCPNameService.Msgid.notFound:
            throw .nameNotFound(name)
        case TCPNameService.Msgid.badRequest:
            throw .invalidName(name, reason: reply.dataComponents.first.map { String(decoding: $0, as: UTF8.self) } ?? "refused by \(described)")
        default:
            break
        }
        throw .unreachable(described, reason: "its answer to the lookup of '\(name)' is not one docs/wire-format.md describes (msgid \(reply.msgid), \(reply.components.count) components)")
    }
}
