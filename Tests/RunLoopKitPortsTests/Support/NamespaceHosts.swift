// Hosts for the tests across machines: network namespaces joined by veth
// links through a bridge (in a namespace of its own, so that nothing of
// the test's network touches this machine's), each host with its own
// address, and each process in it with its own pid and mount namespaces
// (`unshare --pid --fork --mount-proc`) and its own configuration and
// runtime directories. Everything is removed by `remove()`, which every
// test calls in a `defer`, also on failure; hosts a crashed run left
// behind are removed by the next run.
import Glibc
import RunLoopKit
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

final class NamespaceHosts: Sendable {
    /// What the namespaces are called: `rlkt<run>-<role>`.
    static let prefix = "rlkt"
    let run: String
    let addresses: [String]
    let switchNamespace: String

    var namespaces: [String] { addresses.indices.map { hostNamespace($0) } }

    func hostNamespace(_ index: Int) -> String { "\(Self.prefix)\(run)-h\(index)" }

    /// Whether namespace hosts can be made here (root, iproute2, unshare).
    static var available: Bool {
        getuid() == 0 && access("/usr/sbin/ip", X_OK) == 0 && access("/usr/bin/unshare", X_OK) == 0
    }

    /// Whether a test must not fall back to loopback (CI sets it).
    static var required: Bool { getenv("RUNLOOPKIT_REQUIRE_NETNS").map { String(cString: $0) == "1" } ?? false }

    /// Makes `count` hosts at 10.x.y.1 … count on one bridge.
    init(count: Int) throws {
        Self.removeLeftovers()
        let pid = getpid()
        run = String(pid % 100_000)
        let subnet = "10.\(201 + Int(pid % 50)).\(Int(pid / 50) % 250)"
        addresses = (0..<count).map { "\(subnet).\($0 + 1)" }
        switchNamespace = "\(Self.prefix)\(run)-sw"
        do {
            try Self.ip(["netns", "add", switchNamespace])
            try Self.ip(["-n", switchNamespace, "link", "add", "br0", "type", "bridge"])
            try Self.ip(["-n", switchNamespace, "link", "set", "br0", "up"])
            for index in 0..<count {
                let namespace = hostNamespace(index)
                try Self.ip(["netns", "add", namespace])
                try Self.ip(["link", "add", "eth0", "netns", namespace, "type", "veth", "peer", "name", "port\(index)", "netns", switchNamespace])
                try Self.ip(["-n", namespace, "addr", "add", addresses[index] + "/24", "dev", "eth0"])
                try Self.ip(["-n", namespace, "link", "set", "eth0", "up"])
                try Self.ip(["-n", namespace, "link", "set", "lo", "up"])
                try Self.ip(["-n", switchNamespace, "link", "set", "port\(index)", "master", "br0", "up"])
            }
        } catch {
            remove()
            throw error
        }
    }

    /// What runs `rlk-net-peer` inside host `index`: its network namespace,
    /// then pid and mount namespaces of its own (its own /proc), killed
    /// with `unshare` (`--kill-child`).
    func launcher(_ index: Int) -> [String] {
        ["/usr/sbin/ip", "netns", "exec", hostNamespace(index), "/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
    }

    /// Takes host `index`'s link down (a partition: both ends live on) or up.
    func setLink(_ index: Int, up: Bool) throws {
        try Self.ip(["-n", switchNamespace, "link", "set", "port\(index)", up ? "up" : "down"])
    }

    /// Checks that a descriptor's endpoint is an address these hosts have,
    /// before anything is sent to it: traffic never goes anywhere else.
    func checkMade(_ descriptor: [UInt8]) throws {
        let address = try descriptor.withUnsafeBytes { try WireFormat.decodeDescriptor($0) }
        guard let listener = address.tcpEndpoint?.listener, let host = TCPTransport.hostAndPort(listener)?.host,
              addresses.contains(host) else {
            throw TestFailure("a descriptor names \(address), not an address of these hosts \(addresses)")
        }
    }

    /// Removes every namespace (their links and the bridge go with them).
    func remove() {
        for namespace in namespaces + [switchNamespace] { try? Self.ip(["netns", "delete", namespace]) }
    }

    /// Namespaces of runs whose test process is gone.
    static func removeLeftovers() {
        for name in PortProcess.directoryEntries("/run/netns") where name.hasPrefix(prefix) {
            let digits = name.dropFirst(prefix.count).prefix { $0.isNumber }
            guard let runPID = Int32(digits) else { continue }
            if runPID != getpid() % 100_000 && !PortProcess.directoryEntries("/proc").contains(String(runPID)) {
                try? ip(["netns", "delete", name])
            }
        }
    }

    @discardableResult
    static func ip(_ arguments: [String]) throws -> String {
        let directory = NetworkKeysFixture.shared.directory
        let program = try SpawnedProgram(path: "/usr/sbin/ip", arguments, in: directory)
        let status = program.waitForExit(timeout: 30)
        guard status == 0 else {
            throw TestFailure("ip \(arguments.joined(separator: " ")) failed (\(String(describing: status))): \(program.errorOutput)")
        }
        return program.output
    }
}
