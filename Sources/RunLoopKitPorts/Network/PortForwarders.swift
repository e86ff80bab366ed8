import Logging
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The way from a tcp socket to each tcp port of this process: an inproc
/// PUSH connected to the port's own queue, made on first use and closed
/// with its port. Shared by every reader of every tcp socket
/// (`TCPInbound`), one send at a time.
final class PortForwarders: @unchecked Sendable {
    enum Result { case sent, full, noSuchPort }

    private let lock = Lock()
    // Under lock.
    private var sockets: [UInt64: (port: WeakPortReference, socket: Socket)] = [:]
    private var isClosed = false
    private static let logger = Logger(label: "RunLoopKit.Network")

    /// Sends `message`'s frames on to port `portID`'s queue, without
    /// waiting: the first frame, then (libzmq takes a multipart message
    /// whole) the rest. Each frame's content moves to libzmq, nothing copied.
    func forward(_ message: ArraySlice<Message>, to portID: UInt64) -> Result {
        lock.lock()
        defer { lock.unlock() }
        guard let socket = socket(for: portID) else { return .noSuchPort }
        defer { socket.releaseOwnership() }
        let first = message.startIndex
        do {
            guard try socket.send(message[first], more: message.count > 1, dontWait: true) else { return .full }
            for index in (first + 1)..<message.endIndex { try socket.send(message[index], more: index < message.endIndex - 1) }
        } catch {
            Self.logger.error("tcp: forwarding to a port failed: \(error)")
        }
        return .sent
    }

    /// ZMQ_FD of port `portID`'s forwarder, to wait on for room.
    func pollDescriptor(for portID: UInt64) -> Int32? {
        lock.withLock {
            guard let socket = sockets[portID]?.socket else { return nil }
            defer { socket.releaseOwnership() }
            return try? socket.fileDescriptor
        }
    }

    /// At exit: every forwarder closed.
    func closeAll() {
        lock.withLock {
            isClosed = true
            for (_, forwarder) in sockets { forwarder.socket.close() }
            sockets.removeAll()
        }
    }

    /// The PUSH to a live tcp port of this process. Lock held.
    private func socket(for portID: UInt64) -> Socket? {
        if let known = sockets[portID] {
            if let port = known.port.port, port.isValid { return known.socket }
            known.socket.close()
            sockets[portID] = nil
            return nil
        }
        guard !isClosed, let port = PortRegistry.shared.localPort(portID), port.isValid, port.address.reach == .network else { return nil }
        do {
            let socket = try ZMQContext.shared.makeSocket(.push)
            try socket.setSendHighWaterMark(SendChannel.highWaterMark)
            try socket.connect(port.address.inprocEndpoint)
            sockets[portID] = (WeakPortReference(port), socket)
            return socket
        } catch {
            Self.logger.error("tcp: cannot reach port \(portID) in this process: \(error)")
            return nil
        }
    }
}

/// A port a forwarder leads to, held weakly: a closed port's forwarder
/// goes with it.
struct WeakPortReference {
    weak var port: Port?
    init(_ port: Port) { self.port = port }
}
