// A peer in another language over tcp (S-NET-1, S-NET-2, S-NET-4):
// Tests/ForeignPeers/tcp_peer.py, Python with pyzmq and CURVE, written from
// docs/wire-format.md and docs/ports.md alone, looks a name of this process
// up at its endpoint and exchanges messages with the port it finds.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("A Python peer with pyzmq and CURVE, written from the docs (S-NET-1, S-NET-2, S-NET-4)", .serialized, .blocksThreads)
struct TCPForeignPeerTests {
    init() { _ = NetworkKeysFixture.shared }

    /// The Python of the virtual environment scripts/ensure-test-deps.sh
    /// makes, with pyzmq.
    static var python: String {
        NameLookupTests.foreignPeer("").split(separator: "/", omittingEmptySubsequences: false).dropLast(3).joined(separator: "/")
            + "/.build/foreign-peers/bin/python3"
    }

    /// This process serving an echo port under a name, on a loop thread.
    final class Server: Sendable {
        let thread = LoopThread(name: "foreign-peer-server")
        let port: Port
        let name = "py-echo-\(getpid())"

        init() throws {
            try thread.start()
            port = try Port(transport: .tcp(.listening(on: "127.0.0.1")))
            port.setMessageHandler { message in
                try? message.replyPort?.send(msgid: message.msgid, components: message.components, before: Date() + 5)
            }
            try port.schedule(on: thread)
            try PortNameServer.register(port, name: name)
        }

        var endpoint: String { port.address.tcpEndpoint!.listener! }

        func stop() {
            port.invalidate()
            thread.stop()
        }
    }

    /// Runs the peer as child `child` (its secret key) against `server`;
    /// `mode`: its hello's home frame ("home", "badhome"), or none.
    static func runPeer(child: Int, against server: Server, mode: String? = nil) throws -> SpawnedProgram {
        try runPeer("tcp_peer.py", child: child, endpoint: server.endpoint, name: server.name, extra: mode.map { [$0] } ?? [])
    }

    /// Runs `script` as child `child` against the port named `name` at `endpoint`.
    static func runPeer(_ script: String, child: Int, endpoint: String, name: String, extra: [String] = []) throws -> SpawnedProgram {
        guard access(python, X_OK) == 0 else {
            throw TestFailure("\(python) is missing: run ./scripts/test.sh, or source scripts/ensure-test-deps.sh (it installs pyzmq from PyPI there)")
        }
        let fixture = NetworkKeysFixture.shared
        let program = try SpawnedProgram(
            path: python,
            [NameLookupTests.foreignPeer(script), endpoint, fixture.parent.publicKey.z85,
             fixture.directory + "/child-\(child)/runloopkit/curve.key", name] + extra,
            in: fixture.directory)
        _ = program.waitForExit(timeout: 60)
        return program
    }

    @Test("S-NET-4, S-NET-2: an authorized Python peer looks the name up, gets a send right to the port, sends with a reply port of its own and gets the replies; its two malformed messages are dropped and counted, and the next one is delivered")
    func authorizedPeerLooksUpAndExchanges() throws {
        let server = try Server()
        defer { server.stop() }
        let endpointBadMagic = Port.tcpEndpointDropCounts[.badMagic]
        let program = try Self.runPeer(child: 3, against: server)
        let lines = program.output.split(separator: "\n").map(String.init)
        #expect(program.waitForExit(timeout: 1) == 0, "\(program.output) \(program.errorOutput)")
        #expect(lines.first == "WELCOMED \(NetworkPeerProcess.hex(WireFormat.instanceBytes(.current)))")
        #expect(lines.dropFirst().first == "FOUND \(server.port.address.portID) \(server.endpoint) v3",
                "a peer that sent no home frame gets full (version-3) descriptors, and a welcome of one frame")
        #expect(Array(lines.dropFirst(2).prefix(2)) == ["REPLY from python", "REPLY after malformed"])
        #expect(lines.dropFirst(4).first?.hasPrefix("NOTFOUND ") == true)
        #expect(lines.last == "DONE")
        // The bad magic names no port: the endpoint counts it. The record
        // that runs past its frame reached the port, which counts it.
        #expect(Port.tcpEndpointDropCounts[.badMagic] >= endpointBadMagic + 1)
        #expect(server.port.dropCounts[.badPackedRecords] == 1)
        #expect(server.port.droppedMessageCount == 1)
    }

    @Test("S-NET-1: a Python peer whose hello carries a home frame gets this process's home with the welcome, reads the port it looks up from a 16-byte version-4 descriptor against it, and its own version-4 reply port gets the replies; the malformed messages after are still dropped and counted")
    func peerWithAHomeFrameReadsRelativeDescriptors() throws {
        let server = try Server()
        defer { server.stop() }
        let program = try Self.runPeer(child: 3, against: server, mode: "home")
        let lines = program.output.split(separator: "\n").map(String.init)
        #expect(program.waitForExit(timeout: 1) == 0, "\(program.output) \(program.errorOutput)")
        #expect(lines.first == "WELCOMED \(NetworkPeerProcess.hex(WireFormat.instanceBytes(.current)))")
        let home = try #require(lines.dropFirst().first)
        #expect(home.hasPrefix("HOME \(getpid()) ") && home.split(separator: " ").contains(Substring(server.endpoint)), "\(home)")
        #expect(lines.dropFirst(2).first == "FOUND \(server.port.address.portID) \(server.endpoint) v4")
        #expect(Array(lines.dropFirst(3).prefix(2)) == ["REPLY from python", "REPLY after malformed"])
        #expect(lines.last == "DONE")
        #expect(server.port.dropCounts[.badPackedRecords] == 1)
        #expect(server.port.droppedMessageCount == 1)
    }

    @Test("S-NET-1: a Python peer whose hello carries a home frame and a reads frame gets a welcome of three frames, and then version 5 both ways: its version-5 lookup and requests (a short version-4 reply port) are answered in version 5, which it parses; its malformed version-5 record is dropped and counted")
    func peerThatReadsVersion5() throws {
        let server = try Server()
        defer { server.stop() }
        let program = try Self.runPeer(child: 3, against: server, mode: "compact")
        let lines = program.output.split(separator: "\n").map(String.init)
        #expect(program.waitForExit(timeout: 1) == 0, "\(program.output) \(program.errorOutput)")
        #expect(lines.first == "WELCOMED \(NetworkPeerProcess.hex(WireFormat.instanceBytes(.current)))")
        #expect(lines.dropFirst(2).first == "FOUND \(server.port.address.portID) \(server.endpoint) v4")
        #expect(Array(lines.dropFirst(3).prefix(2)) == ["REPLY from python", "REPLY after malformed"])
        #expect(lines.last == "DONE")
        #expect(server.port.dropCounts[.badPackedRecords] == 1)
        #expect(server.port.droppedMessageCount == 1)
    }

    @Test("S-NET-1, S-PORT-7: a Python peer whose hello's home frame is malformed (cut short) gets no welcome: the endpoint drops the hello and counts it as truncated")
    func peerWithAMalformedHomeFrameIsNotWelcomed() throws {
        let server = try Server()
        defer { server.stop() }
        let truncated = Port.tcpEndpointDropCounts[.truncated]
        let program = try Self.runPeer(child: 3, against: server, mode: "badhome")
        #expect(program.waitForExit(timeout: 1) == 3, "\(program.output) \(program.errorOutput)")
        #expect(program.output == "REFUSED\n")
        #expect(Port.tcpEndpointDropCounts[.truncated] >= truncated + 1)
    }

    @Test("Typed payloads (issue 43): a Python peer written from docs/wire-format.md sends a typed request in binary and in JSON with a port of its own inside the value, and reads the typed answer (in its request's encoding) and the extra copies sent to that port")
    func typedPayloadsFromPython() throws {
        let server = try QuestionServer("typed-python-server", transport: .tcp(.listening(on: "127.0.0.1")))
        defer { server.close() }
        let name = "py-typed-\(getpid())"
        try PortNameServer.register(server.port, name: name)
        let program = try Self.runPeer("typed_peer.py", child: 3, endpoint: server.port.address.tcpEndpoint!.listener!, name: name)
        #expect(program.waitForExit(timeout: 1) == 0, "\(program.output) \(program.errorOutput)")
        let lines = program.output.split(separator: "\n").map(String.init)
        for encoding in ["binary", "json"] {
            #expect(lines.filter { $0.hasPrefix("ANSWER \(encoding) ") } == ["ANSWER \(encoding) from python|from python \(getpid())"], "\(lines)")
            #expect(lines.filter { $0.hasPrefix("EXTRA \(encoding) ") }.sorted() == ["EXTRA \(encoding) extra 0", "EXTRA \(encoding) extra 1"], "\(lines)")
        }
        #expect(lines.last == "DONE")
        #expect(server.port.droppedMessageCount == 0)
    }

    @Test("S-NET-2: a Python peer whose key the authorized-keys file does not list is refused: no welcome, no lookup")
    func unlistedPeerIsRefused() throws {
        let server = try Server()
        defer { server.stop() }
        let program = try Self.runPeer(child: NetworkKeysFixture.unlistedChild, against: server)
        #expect(program.waitForExit(timeout: 1) == 3, "\(program.output) \(program.errorOutput)")
        #expect(program.output == "REFUSED\n")
    }
}
