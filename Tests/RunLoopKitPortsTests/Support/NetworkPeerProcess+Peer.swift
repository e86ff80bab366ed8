// What the port tests ask of `rlk-net-peer` (Tests/NetworkPeer) children
// and of the hosts they run on (NetworkPeerProcess and NetworkHosts are
// RunLoopKitTestSupport's, shared with the distributed actors' tests).
import Glibc
import RunLoopKit
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

extension NetworkPeerProcess {
    /// A child serving a tcp port at `bind`; returns once it printed its descriptor.
    static func serve(
        child: Int, bind: String = "127.0.0.1", port: UInt16 = 0, plain: Bool = false, name: String? = nil, launcher: [String] = []
    ) throws -> NetworkPeerProcess {
        let options = (plain ? ["plain"] : []) + (name.map { ["name", $0] } ?? [])
        let peer = try start(["serve", bind, "\(port)"] + options, child: child, launcher: launcher)
        guard peer.waitForLine(starting: "PORT ") != nil else {
            peer.program.killAndReap()
            throw TestFailure("rlk-net-peer serve did not start: \(peer.program.output) \(peer.program.errorOutput)")
        }
        return peer
    }

    /// A child making `count` requests to the port `descriptor` names.
    static func call(
        child: Int, _ descriptor: [UInt8], count: Int, payload: String = "", pauseMilliseconds: Int = 0, launcher: [String] = []
    ) throws -> NetworkPeerProcess {
        try start(["call", hex(descriptor), "\(count)", payload, "\(pauseMilliseconds)"], child: child, launcher: launcher)
    }

    /// The endpoint the served port's process listens at, `tcp://host:port`.
    var endpoint: String { (try? Port.fromDescriptor(descriptor))?.address.tcpEndpoint?.listener ?? "" }

    /// The served port's descriptor.
    var descriptor: [UInt8] { Self.bytes(fromHex: line(starting: "PORT ") ?? "") }

    /// A send right to the served port, in this process.
    func sendRight() throws -> Port { try Port.fromDescriptor(descriptor) }
}

extension NamespaceHosts {
    /// Checks that a descriptor's endpoint is an address these hosts have,
    /// before anything is sent to it: traffic never goes anywhere else.
    func checkMade(_ descriptor: [UInt8]) throws {
        let address = try descriptor.withUnsafeBytes { try WireFormat.decodeDescriptor($0) }
        guard let listener = address.tcpEndpoint?.listener, let host = TCPTransport.hostAndPort(listener)?.host,
              addresses.contains(host) else {
            throw TestFailure("a descriptor names \(address), not an address of these hosts \(addresses)")
        }
    }
}

extension NetworkHosts {
    /// An `rlk-net-peer` serving a tcp port in `host`.
    func serve(_ host: Int, port: UInt16 = 0, name: String? = nil) throws -> NetworkPeerProcess {
        try NetworkPeerProcess.serve(child: host, bind: address(host), port: port, name: name, launcher: launcher(host))
    }

    /// Runs `rlk-net-peer` in `host` with `arguments`, after checking
    /// that every descriptor among them names an address of these hosts.
    func run(
        _ host: Int, _ arguments: [String], descriptors: [[UInt8]], environment: [String: String] = [:]
    ) throws -> NetworkPeerProcess {
        for descriptor in descriptors { try namespaces?.checkMade(descriptor) }
        return try NetworkPeerProcess.start(arguments, child: host, launcher: launcher(host), environment: environment)
    }
}
