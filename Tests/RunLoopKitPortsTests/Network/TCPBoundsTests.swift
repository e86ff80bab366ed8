import RunLoopKit
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing
import ZeroMQ

@Suite("The tcp bounds a process sets (S-NET-3)", .blocksThreads)
struct TCPBoundsTests {
    init() { _ = NetworkKeysFixture.shared }

    @Test("S-NET-3: a heartbeat timeout (Port.tcpHeartbeatTimeout, RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT) is taken within 0.1 s and 6,553 s, the longest libzmq carries (ZMQ_HEARTBEAT_TTL counts tenths of a second in 16 bits): a longer one no longer fails every tcp socket's options")
    func heartbeatTimeoutStaysWithinWhatLibzmqCarries() throws {
        let second: UInt64 = 1_000_000_000
        #expect(NetworkHub.heartbeatTimeout(clamping: 100_000 * second) == 6_553 * second)
        #expect(NetworkHub.heartbeatTimeout(clamping: 1) == second / 10)
        #expect(NetworkHub.heartbeatTimeout(clamping: 10 * second) == 10 * second)
        let socket = try ZMQContext.shared.makeSocket(.router)
        defer { socket.close() }
        // The longest is what a socket takes; a second more it refuses.
        try NetworkHub.applyConnectionOptions(to: socket, heartbeatTimeout: NetworkHub.heartbeatTimeout(clamping: 100_000 * second))
        #expect(throws: ZMQError.self) { try NetworkHub.applyConnectionOptions(to: socket, heartbeatTimeout: 6_554 * second) }
    }

    @Test("S-NET-3: a process started with RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT past the longest (100,000 s) takes the longest: it serves a tcp port and answers a request")
    func aHeartbeatTimeoutPastTheLongestInTheEnvironmentStillServes() async throws {
        let peer = try NetworkPeerProcess.start(
            ["serve", "127.0.0.1", "0"], child: 1, environment: ["RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT": "100000"])
        defer { peer.stop() }
        let line = try #require(peer.waitForLine(starting: "PORT "), "\(peer.program.output) \(peer.program.errorOutput)")
        let remote = try Port.fromDescriptor(NetworkPeerProcess.bytes(fromHex: line))
        _ = try await remote.request(msgid: 1, timeout: .seconds(20))
    }
}
