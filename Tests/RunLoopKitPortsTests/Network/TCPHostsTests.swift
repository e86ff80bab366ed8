// Ports between hosts (S-NET-1, S-NET-3, S-NET-4, S-NET-5): three hosts made of
// network namespaces joined through a bridge (NamespaceHosts), a
// RunLoopKit process in each with its own pid and mount namespaces and its
// own key, configuration and runtime directories. Every address a process
// is told to send to is checked to be one these hosts have, before it
// starts. Where namespaces cannot be made (not root), the same runs over
// loopback, and says so; with RUNLOOPKIT_REQUIRE_NETNS=1 (CI) it fails
// instead.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Ports between hosts made of network namespaces (S-NET-1, S-NET-3, S-NET-4, S-NET-5)", .serialized, .blocksThreads)
struct TCPHostsTests {
    /// Three hosts, or loopback where namespaces cannot be made.
    static func hosts() throws -> NetworkHosts { try NetworkHosts(count: 3) }

    static let hex = NetworkPeerProcess.hex

    @Test("S-NET-1: between hosts, data, a port component and a reply port go both ways: host A's request is answered, and host B's send to A's port arrives")
    func messagesBothWays() throws {
        let hosts = try Self.hosts()
        defer { hosts.remove() }
        let b = try hosts.serve(1)
        defer { b.stop() }
        let call = try hosts.run(0, ["call", Self.hex(b.descriptor), "3", "from-a-"], descriptors: [b.descriptor])
        #expect(call.program.waitForExit(timeout: 60) == 0, "\(call.program.output) \(call.program.errorOutput)")
        #expect(call.lines(starting: "REPLY ") == ["from-a-0", "from-a-1", "from-a-2"])
        let exchange = try hosts.run(0, ["exchange", Self.hex(b.descriptor), hosts.address(0)], descriptors: [b.descriptor])
        #expect(exchange.program.waitForExit(timeout: 60) == 0, "\(exchange.program.output) \(exchange.program.errorOutput)")
        #expect(exchange.line(starting: "BACK ")?.hasPrefix("via ") == true)
    }

    @Test("S-NET-1: a send right passed from host A to host B reaches host C's port: B sends to the original")
    func rightPassedFromAThroughBToC() throws {
        let hosts = try Self.hosts()
        defer { hosts.remove() }
        let b = try hosts.serve(1)
        defer { b.stop() }
        let c = try hosts.serve(2)
        defer { c.stop() }
        let pass = try hosts.run(0, ["pass", Self.hex(b.descriptor), Self.hex(c.descriptor)], descriptors: [b.descriptor, c.descriptor])
        #expect(pass.program.waitForExit(timeout: 60) == 0, "\(pass.program.output) \(pass.program.errorOutput)")
        #expect(waitUntil(timeout: 30) { c.line(starting: "GOT ") != nil }, "\(c.program.output)")
        #expect(c.line(starting: "GOT ")?.hasPrefix("via ") == true)
    }

    @Test("S-NET-4: between hosts, host A looks up a name host B's process registered, at B's endpoint with B's public key, and its request on the send right it gets is answered")
    func nameLookedUpOnAnotherHost() throws {
        let hosts = try Self.hosts()
        defer { hosts.remove() }
        let b = try hosts.serve(1, name: "jobs")
        defer { b.stop() }
        let key = NetworkKeysFixture.shared.children[1].publicKey.z85
        let lookup = try hosts.run(0, ["lookup", b.endpoint, key, "jobs"], descriptors: [b.descriptor])
        #expect(lookup.program.waitForExit(timeout: 60) == 0, "\(lookup.program.output) \(lookup.program.errorOutput)")
        #expect(lookup.line(starting: "REPLY ") == "looked-up")
        #expect(waitUntil(timeout: 10) { b.line(starting: "REQ ") == "looked-up" }, "\(b.program.output)")
        let unknown = try hosts.run(0, ["lookup", b.endpoint, key, "nobody"], descriptors: [b.descriptor])
        #expect(unknown.program.waitForExit(timeout: 60) == 1)
        #expect(unknown.line(starting: "ERROR ")?.hasPrefix("nameNotFound") == true, "\(unknown.program.output)")
    }

    @Test("S-NET-3: a link taken down while both processes live (a partition): heartbeats find the peer dead within their bound, and the waiting request fails with connectionLost")
    func partitionIsFoundByHeartbeats() throws {
        let hosts = try Self.hosts()
        defer { hosts.remove() }
        let b = try hosts.serve(1)
        defer {
            kill(b.program.pid, SIGCONT)
            b.stop()
        }
        let hold = try hosts.run(0, ["hold", Self.hex(b.descriptor)], descriptors: [b.descriptor],
                                 environment: NetworkPeerProcess.shortHeartbeats)
        #expect(waitUntil(timeout: 60) { hold.line(starting: "WAITING") != nil }, "\(hold.program.output) \(hold.program.errorOutput)")
        let cut = MonotonicClock.now()
        if let namespaces = hosts.namespaces {
            try namespaces.setLink(1, up: false)
        } else {
            kill(b.program.pid, SIGSTOP)  // over loopback: the peer goes silent, its connection stays
        }
        #expect(hold.program.waitForExit(timeout: 60) == 1)
        let elapsed = MonotonicClock.now() - cut
        #expect(hold.line(starting: "ERROR ")?.hasPrefix("connectionLost") == true, "\(hold.program.output)")
        // The bound (1.25 × the heartbeat timeout `hold` was given) and
        // slack for a loaded machine under ThreadSanitizer; the connection
        // stays open, so only heartbeats can tell.
        #expect(elapsed < NetworkPeerProcess.shortHeartbeatTimeoutNanoseconds * 5 / 4 + 3_000_000_000, "\(elapsed / 1_000_000) ms")
        #expect(hold.line(starting: "ERROR ")?.contains("heartbeats") == true, "\(hold.program.output)")
    }

    @Test("S-NET-3: a process SIGKILLed on its host: the waiting request on another host fails with connectionLost, at once (its kernel closed the connection)")
    func killedProcess() throws {
        let hosts = try Self.hosts()
        defer { hosts.remove() }
        let b = try hosts.serve(1)
        defer { b.stop() }
        let hold = try hosts.run(0, ["hold", Self.hex(b.descriptor)], descriptors: [b.descriptor])
        #expect(waitUntil(timeout: 60) { hold.line(starting: "WAITING") != nil }, "\(hold.program.output) \(hold.program.errorOutput)")
        let killed = MonotonicClock.now()
        b.program.killAndReap()
        #expect(hold.program.waitForExit(timeout: 60) == 1)
        #expect(hold.line(starting: "ERROR ")?.hasPrefix("connectionLost") == true, "\(hold.program.output)")
        let elapsed = MonotonicClock.now() - killed
        // At once: well within `hold`'s heartbeat timeout (the default),
        // with slack for a loaded machine under ThreadSanitizer.
        #expect(NetworkHub.heartbeatTimeoutNanoseconds >= 10_000_000_000)
        #expect(elapsed < 5_000_000_000, "\(elapsed / 1_000_000) ms")
    }

    @Test("S-NET-1, S-NET-5: a process restarted at the same address on its host: the other host's old send right fails, and nothing sent through it reaches the new process")
    func restartedProcessGetsNothingOld() throws {
        let hosts = try Self.hosts()
        defer { hosts.remove() }
        let port: UInt16 = 7400 + UInt16(getpid() % 500)
        let first = try hosts.serve(1, port: port)
        let call = try hosts.run(0, ["call", Self.hex(first.descriptor), "100000", "old-", "50"], descriptors: [first.descriptor])
        defer { call.program.killAndReap() }
        #expect(waitUntil(timeout: 60) { call.lines(starting: "REPLY ").count >= 2 }, "\(call.program.output) \(call.program.errorOutput)")
        first.program.killAndReap()
        let second = try hosts.serve(1, port: port)
        defer { second.stop() }
        #expect(call.program.waitForExit(timeout: 60) == 1, "the old right went on: \(call.program.output.suffix(200))")
        #expect(call.line(starting: "ERROR ")?.hasPrefix("connectionLost") == true, "\(call.program.output.suffix(300))")
        #expect(second.lines(starting: "REQ ").isEmpty, "the new process got \(second.lines(starting: "REQ "))")
    }
}
