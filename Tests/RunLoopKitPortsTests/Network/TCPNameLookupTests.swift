// Names over tcp (S-NET-4): a process serves the names of its tcp ports
// behind its endpoint, and another process looks them up there. The other
// processes are `rlk-net-peer` children on loopback; the same between
// namespace hosts is TCPHostsTests'.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Names looked up over tcp (S-NET-4)", .serialized, .blocksThreads)
struct TCPNameLookupTests {
    init() { _ = NetworkKeysFixture.shared }

    /// Child `index`'s public key, as an operator copies it from its `curve.pub`.
    static func serverKey(_ index: Int) -> PortNameServer.ServerIdentity {
        .curve(publicKey: NetworkKeysFixture.shared.children[index].publicKey.z85)
    }

    /// The connection bound and a slack that holds under ThreadSanitizer on a loaded 2-core machine.
    static var errorBound: UInt64 { NetworkHub.connectionBoundNanoseconds + 3_000_000_000 }

    @Test("S-NET-4: a name a process registered for its tcp port is looked up at its endpoint: the send right is that port's, and a request on it is answered")
    func lookedUpAtTheEndpoint() throws {
        let peer = try NetworkPeerProcess.serve(child: 0, name: "jobs")
        defer { peer.stop() }
        let looked = try PortNameServer.lookup("jobs", at: peer.endpoint, server: Self.serverKey(0))
        #expect(looked.address == (try peer.sendRight()).address)
        let reply = try looked.sendRequest(msgid: 1, components: [.data(Data("hello".utf8))], sendTimeout: 10, receiveTimeout: 10)
        #expect(reply.dataComponents.first == Data("hello".utf8))
        #expect(waitUntil(timeout: 10) { peer.line(starting: "REQ ") == "hello" })
        // `host:port` is taken for `tcp://host:port`.
        let again = try PortNameServer.lookup("jobs", at: String(peer.endpoint.dropFirst("tcp://".count)), server: Self.serverKey(0))
        #expect(again.address == looked.address)
    }

    @Test("S-NET-4: a name the process at the endpoint does not serve is .nameNotFound, answered at once; a malformed name is .invalidName before anything is sent")
    func unknownNameIsNotFound() throws {
        let peer = try NetworkPeerProcess.serve(child: 0, name: "jobs")
        defer { peer.stop() }
        // On a loop thread stopped before the test ends: the answer's reason
        // stays in the thread's reply port until its next message, and a
        // `Data` that long alive at exit reads as a leak to LeakSanitizer
        // (docs/contributing.md).
        let worker = LoopThread(name: "lookup")
        try worker.start()
        defer { worker.stop() }
        let start = MonotonicClock.now()
        let endpoint = peer.endpoint
        #expect(throws: PortError.nameNotFound("nobody")) {
            try worker.performAndWait { try PortNameServer.lookup("nobody", at: endpoint, server: Self.serverKey(0)) }
        }
        #expect(MonotonicClock.now() &- start < Self.errorBound)
        #expect(throws: PortError.self) { try PortNameServer.lookup("../jobs", at: peer.endpoint, server: Self.serverKey(0)) }
    }

    @Test("S-NET-4: where nothing listens, or another key answers, a lookup fails with .unreachable within the tcp connection bound")
    func nothingThereIsUnreachable() throws {
        let closed = "tcp://127.0.0.1:\(try Self.closedPort())"
        var start = MonotonicClock.now()
        #expect(throws: PortError.self) { try PortNameServer.lookup("jobs", at: closed, server: Self.serverKey(0)) }
        #expect(MonotonicClock.now() &- start < Self.errorBound)
        do {
            _ = try PortNameServer.lookup("jobs", at: closed, server: Self.serverKey(0))
        } catch {
            #expect(error.caseName == "unreachable", "\(error)")
        }

        let peer = try NetworkPeerProcess.serve(child: 0, name: "jobs")
        defer { peer.stop() }
        start = MonotonicClock.now()
        do {
            // Child 1's key is not the key of the process there: the handshake fails.
            _ = try PortNameServer.lookup("jobs", at: peer.endpoint, server: Self.serverKey(1))
            Issue.record("a lookup with the wrong server key succeeded")
        } catch {
            #expect(error.caseName == "unreachable", "\(error)")
        }
        #expect(MonotonicClock.now() &- start < Self.errorBound)
        #expect(throws: PortError.self) { try PortNameServer.lookup("jobs", at: "tcp://127.0.0.1", server: Self.serverKey(0)) }
    }

    @Test("S-NET-4, S-PORT-4: an endpoint that takes the connection and never says a word fails the lookup as .unreachable at the tcp connection bound, and the connection is closed afterwards")
    func silentEndpointIsUnreachableAndClosed() throws {
        let silent = try Self.silentListener()
        defer { close(silent.fd) }
        let endpoint = "tcp://127.0.0.1:\(silent.port)"
        let start = MonotonicClock.now()
        do {
            _ = try PortNameServer.lookup("jobs", at: endpoint, server: Self.serverKey(0))
            Issue.record("a silent endpoint answered a lookup")
        } catch {
            #expect(error.caseName == "unreachable", "\(error)")
        }
        let elapsed = MonotonicClock.now() &- start
        #expect(elapsed >= NetworkHub.connectionBoundNanoseconds * 9 / 10, "failed before the bound: \(elapsed / 1_000_000) ms")
        #expect(elapsed < Self.errorBound, "\(elapsed / 1_000_000) ms")
        #expect(waitUntil(timeout: 10) { Self.openConnections(to: endpoint) == 0 }, "the broken connection stays open")
    }

    @Test("S-NET-4, S-NET-3: the holder killed, a lookup fails within the connection bound; restarted at the same address under the same name, it is found again, and the old send right stays invalid")
    func restartedHolderIsFoundAgain() throws {
        let first = try NetworkPeerProcess.serve(child: 0, name: "jobs")
        let endpoint = first.endpoint
        let old = try PortNameServer.lookup("jobs", at: endpoint, server: Self.serverKey(0))
        _ = try old.sendRequest(msgid: 1, components: [.data(Data("one".utf8))], sendTimeout: 10, receiveTimeout: 10)
        first.program.killAndReap()
        #expect(waitUntil(timeout: 10) { !old.isValid }, "the connection's end makes the right invalid (S-NET-3)")

        let start = MonotonicClock.now()
        do {
            _ = try PortNameServer.lookup("jobs", at: endpoint, server: Self.serverKey(0))
            Issue.record("a lookup found a killed holder")
        } catch {
            #expect(error.caseName == "unreachable", "\(error)")
        }
        #expect(MonotonicClock.now() &- start < Self.errorBound)

        let port = TCPTransport.hostAndPort(endpoint)!.port
        let second = try NetworkPeerProcess.serve(child: 0, port: port, name: "jobs")
        defer { second.stop() }
        let new = try PortNameServer.lookup("jobs", at: endpoint, server: Self.serverKey(0))
        #expect(new.address.tcpEndpoint?.instance != old.address.tcpEndpoint?.instance)
        let reply = try new.sendRequest(msgid: 1, components: [.data(Data("two".utf8))], sendTimeout: 10, receiveTimeout: 10)
        #expect(reply.dataComponents.first == Data("two".utf8))
        #expect(!old.isValid)
        #expect(throws: PortError.self) { try old.send(msgid: 1, before: Date() + 1) }
        #expect(second.lines(starting: "REQ ") == ["two"], "nothing meant for the old process reached the new one")
    }

    /// This process's open tcp connections to `endpoint`. Counted by
    /// address, not in all: suites running beside this one open and close
    /// connections of their own meanwhile.
    static func openConnections(to endpoint: String) -> Int {
        NetworkHub.shared.state.withLock { $0.open.values.count { $0.remoteAddress == endpoint } }
    }

    /// A socket listening on 127.0.0.1 that never accepts: the kernel
    /// completes a client's tcp handshake, and nothing more ever comes.
    static func silentListener() throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        let port = try bound(fd)
        guard listen(fd, 8) == 0 else {
            close(fd)
            throw TestFailure("listen: errno \(errno)")
        }
        return (fd, port)
    }

    /// A tcp port of 127.0.0.1 that nothing listens on: bound, then closed.
    static func closedPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        defer { close(fd) }
        return try bound(fd)
    }

    /// Binds `fd` to 127.0.0.1 and a port the system picks, and returns the port.
    static func bound(_ fd: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw TestFailure("bind: errno \(errno)") }
        return UInt16(bigEndian: address.sin_port)
    }
}
