import Glibc
import RunLoopKit

/// An `rlk-peer` child process and a send right to its named port: the
/// other process of RunLoopKit's ipc scenarios (the name travels on the
/// command line; the child registers it with PortNameServer in the run's
/// private runtime directory, and this process looks it up).
final class RLKChildConnection {
    let port: Port
    private let child: ChildProcess

    init(tag: String, cpu: Int32) throws {
        let name = "rlk-bench-\(getpid())-\(tag)"
        let child = try ChildProcess(role: "rlk-peer", cpu: cpu, arguments: [name])
        do {
            port = try PortNameServer.lookup(name, timeout: .seconds(10))
            // One answered request: the child's loop is serving.
            _ = try port.sendRequest(msgid: ChildRoles.Msgid.endOfBatch, sendTimeout: 10, receiveTimeout: 10)
        } catch {
            child.finish(within: 0)
            throw BenchError("the rlk-peer child did not come up: \(error)")
        }
        self.child = child
    }

    /// Asks the child to quit, then reaps it (killing it after 3 s).
    func close() {
        _ = try? port.sendRequest(msgid: ChildRoles.Msgid.quit, sendTimeout: 1, receiveTimeout: 1)
        child.finish(within: 3)
    }
}

/// RunLoopKit's one-way throughput to another process: this thread sends
/// `count` 64-byte PortMessages to the child's ipc port, then an
/// end-of-batch request; the batch ends when the child's answer (with the
/// count it saw) arrives. One sample per batch, in messages per second.
final class RLKProcessFlood: Contender {
    let label = "RunLoopKit Port (ipc, to a child process)"
    private let count: Int
    private let timeout: Double
    private let placement: Placement
    private var connection: RLKChildConnection?

    init(count: Int, timeout: Double, placement: Placement) {
        self.count = count
        self.timeout = timeout
        self.placement = placement
    }

    func setUp() throws {
        connection = try RLKChildConnection(tag: "sink", cpu: placement.second)
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
