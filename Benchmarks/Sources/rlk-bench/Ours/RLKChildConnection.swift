import Glibc
import Synchronization
import RunLoopKit

/// An `rlk-peer` child process and a send right to its named port: the
/// other process of RunLoopKit's ipc scenarios (the name travels on the
/// command line; the child registers it with PortNameServer in the run's
/// private runtime directory, and this process looks it up).
final class RLKChildConnection {
    /// Where the scenario sends: the child's ipc port, or its first tcp port.
    let port: Port
    /// The child's tcp ports, when asked for (`tcp`).
    let tcpPorts: [Port]
    private let ipcPort: Port
    private let child: ChildProcess

    /// `tcp`: the child also serves that many tcp ports behind one
    /// endpoint on 127.0.0.1, CURVE or plain text, fetched over ipc.
    init(tag: String, cpu: Int32, tcp: (security: TCPEndpoint.Security, count: Int)? = nil) throws {
        // A serial number too: two contenders of one scenario may share a
        // tag, and the second child must not find the first one's name.
        let name = "rlk-bench-\(getpid())-\(tag)-\(Self.nextSerial())"
        let tcpArguments = tcp.map { [$0.security == .plainText ? "plain" : "curve", "\($0.count)"] } ?? []
        let child = try ChildProcess(role: "rlk-peer", cpu: cpu, arguments: [name] + tcpArguments)
        do {
            ipcPort = try PortNameServer.lookup(name, timeout: .seconds(10))
            // One answered request: the child's loop is serving.
            _ = try ipcPort.sendRequest(msgid: ChildRoles.Msgid.endOfBatch, sendTimeout: 10, receiveTimeout: 10)
            tcpPorts = try Self.fetchTCPPorts(from: ipcPort, count: tcp?.count ?? 0)
            port = tcpPorts.first ?? ipcPort
            // A first message over tcp makes the connection (CURVE's handshake included).
            if tcp != nil { _ = try port.sendRequest(msgid: ChildRoles.Msgid.endOfBatch, sendTimeout: 10, receiveTimeout: 10) }
        } catch {
            child.finish(within: 0)
            throw BenchError("the rlk-peer child did not come up: \(error)")
        }
        self.child = child
    }

    private static let serials = Mutex(0)

    private static func nextSerial() -> Int {
        serials.withLock { serial in
            serial += 1
            return serial
        }
    }

    private static func fetchTCPPorts(from port: Port, count: Int) throws -> [Port] {
        var ports: [Port] = []
        while ports.count < count {
            var from = UInt32(ports.count).littleEndian
            let reply = try port.sendRequest(
                msgid: ChildRoles.Msgid.tcpPorts, components: [.data(withUnsafeBytes(of: &from) { Data($0) })],
                sendTimeout: 10, receiveTimeout: 10)
            let batch = reply.components.compactMap { component -> Port? in
                if case let .port(port) = component { port } else { nil }
            }
            guard !batch.isEmpty else { throw BenchError("the child gave \(ports.count) of \(count) tcp ports") }
            ports += batch
        }
        return ports
    }

    /// Asks the child to quit, then reaps it (killing it after 3 s).
    func close() {
        _ = try? ipcPort.sendRequest(msgid: ChildRoles.Msgid.quit, sendTimeout: 1, receiveTimeout: 1)
        child.finish(within: 3)
    }
}

/// RunLoopKit's one-way throughput to another process: this thread sends
/// `count` 64-byte PortMessages to the child's ipc port, then an
/// end-of-batch request; the batch ends when the child's answer (with the
/// count it saw) arrives. One sample per batch, in messages per second.
final class RLKProcessFlood: Contender {
    let label: String
    private let count: Int
    private let timeout: Double
    private let placement: Placement
    /// Over tcp to one of the child's tcp ports, CURVE or plain; else ipc.
    private let tcp: TCPEndpoint.Security?
    private var connection: RLKChildConnection?

    init(count: Int, timeout: Double, placement: Placement, tcp: TCPEndpoint.Security? = nil) {
        self.count = count
        self.timeout = timeout
        self.placement = placement
        self.tcp = tcp
        label = switch tcp {
        case nil: "RunLoopKit Port (ipc, to a child process)"
        case .curve?: "RunLoopKit Port (tcp, CURVE, to a child process)"
        case .plainText?: "RunLoopKit Port (tcp, plain text, to a child process)"
        }
    }

    func setUp() throws {
        connection = try RLKChildConnection(tag: "sink", cpu: placement.second, tcp: tcp.map { ($0, 1) })
    }

    func measure() throws -> [Double] {
        try placement.whileFloodPlaced { try measurePinned() }
    }

    private func measurePinned() throws -> [Double] {
        guard let port = connection?.port else { throw BenchError("not set up") }
        let payload: [PortMessage.Component] = [.data(Data(repeating: 0x2A, count: 64))]
        let deadline = Date() + timeout
        let start = monotonicNanoseconds()
        for _ in 0..<count { try port.send(msgid: ChildRoles.Msgid.data, components: payload, before: deadline) }
        let reply = try port.sendRequest(msgid: ChildRoles.Msgid.endOfBatch, sendTimeout: timeout, receiveTimeout: timeout)
        let elapsed = monotonicNanoseconds() - start
        let seen = reply.dataComponents.first.map { data in
            data.withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
        } ?? 0
        guard seen == UInt64(count) else { throw BenchError("the child counted \(seen) of \(count) messages") }
        return [Double(count) / (Double(elapsed) / 1e9)]
    }

    func tearDown() {
        connection?.close()
        connection = nil
    }
}
