import Foundation
import Logging
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The name service behind every tcp endpoint of a process (S-NET-4,
/// NSSocketPortNameServer's role): a port of its own, with the reserved
/// port id 0, that answers a lookup of a name this process registered for
/// a tcp port with a send right to it. Another host reaches it as it
/// reaches any tcp port of the process, secured the same way (CURVE and
/// the authorized-keys file), and looks names up with
/// `PortNameServer.lookup(_:at:serverKey:timeout:)`; a program in another
/// language sends the lookup of docs/wire-format.md, "Names over tcp".
///
/// Only names of tcp ports are answered: a send right to an inproc or ipc
/// port cannot travel over tcp (S-PORT-2). The service starts with the
/// process's first tcp endpoint, on a loop thread of its own
/// (`RunLoopKit.names`), and lives until the process exits.
enum TCPNameService {
    /// The port id the service has behind every endpoint.
    static let portID: UInt64 = 0

    /// Message ids of the lookup and its answers (docs/wire-format.md).
    enum Msgid {
        /// A lookup: one data component, the name in UTF-8, and a reply port.
        static let lookup: UInt32 = 1
        /// The answer when the name is served: one port component.
        static let found: UInt32 = 1
        /// The answer when it is not: one data component, why, in UTF-8.
        static let notFound: UInt32 = 2
        /// The answer to a message that is not a lookup: why, in UTF-8.
        static let badRequest: UInt32 = 3
    }

    private static let logger = Logger(label: "RunLoopKit.Network")

    /// Starts the service, once per process; the first tcp endpoint does.
    static func start() {
        _ = running
    }

    /// The service's port and the thread that serves it, made on first use.
    private static let running: (port: Port, thread: LoopThread)? = {
        let thread = LoopThread(name: "RunLoopKit.names")
        do {
            try thread.start()
            let port = try Port(transport: .tcp(.connectingOnly), reservedID: portID)
            port.setMessageHandler { answer($0) }
            try port.schedule(on: thread, forMode: .default)
            return (port, thread)
        } catch {
            logger.error("tcp: the name service cannot start (\(error)); names are not answered over tcp")
            thread.stop()
            return nil
        }
    }()

    /// Answers one message on the reply port it names (a message without
    /// one cannot be answered, and is dropped).
    private static func answer(_ message: PortMessage) {
        guard let replyPort = message.replyPort else { return }
        let reply: (msgid: UInt32, components: [PortMessage.Component])
        switch lookup(message) {
        case let .success(port): reply = (Msgid.found, [.port(port)])
        case let .failure(.notFound(reason)): reply = (Msgid.notFound, [.data(Data(reason.utf8))])
        case let .failure(.badRequest(reason)): reply = (Msgid.badRequest, [.data(Data(reason.utf8))])
        }
        do {
            try replyPort.send(msgid: reply.msgid, components: reply.components, before: Date(timeIntervalSinceNow: 1))
        } catch {
            logger.notice("tcp: a name lookup's answer could not be sent: \(error)")
        }
    }

    private enum Refusal: Error {
        case notFound(String)
        case badRequest(String)
    }

    /// The tcp port registered under the name `message` asks for.
    private static func lookup(_ message: PortMessage) -> Result<Port, Refusal> {
        guard message.msgid == Msgid.lookup, message.components.count == 1, let bytes = message.dataComponents.first else {
            return .failure(.badRequest("a lookup is msgid \(Msgid.lookup) with one data component, the name in UTF-8, and a reply port"))
        }
        guard let name = String(bytes: bytes, encoding: .utf8) else { return .failure(.badRequest("the name is not UTF-8")) }
        do throws(PortError) { try PortNameServer.validate(name) } catch {
            return .failure(.badRequest("\(error)"))
        }
        guard let port = PortNameServer.table.port(named: name), port.isValid else {
            return .failure(.notFound("no port of this process is registered under '\(name)'"))
        }
        guard port.address.reach == .network else {
            return .failure(.notFound("'\(name)' is registered for a port that is not reachable over tcp"))
        }
        return .success(port)
    }
}
