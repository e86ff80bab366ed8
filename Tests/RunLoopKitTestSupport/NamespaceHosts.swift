// Hosts for the tests across machines: network namespaces joined by veth
// links through a bridge (in a namespace of its own, so that nothing of
// the test's network touches this machine's), each host with its own
// address, and each process in it with its own pid and mount namespaces
// (`unshare --pid --fork --mount-proc`) and its own configuration and
// runtime directories. Everything is removed by `remove()`, which every
// test calls in a `defer`, also on failure; hosts a crashed run left
// behind are removed by the next run. Shared by the tests of every target
// that runs processes on hosts (the ports' network tests, the distributed
// actors'): `NetworkHosts` is what a test makes.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Hosts made of network namespaces where they can be made (root, iproute2,
/// unshare), else loopback, which a test says it ran on; with
/// RUNLOOPKIT_REQUIRE_NETNS=1 (CI) making them fails instead.
package final class NetworkHosts: Sendable {
    package let namespaces: NamespaceHosts?

    /// `count` hosts, or loopback where namespaces cannot be made.
    package init(count: Int) throws {
        _ = NetworkKeysFixture.shared
        if NamespaceHosts.available {
            namespaces = try NamespaceHosts(count: count)
        } else if NamespaceHosts.required {
            throw TestFailure("RUNLOOPKIT_REQUIRE_NETNS=1, but namespace hosts cannot be made here (root, /usr/sbin/ip and /usr/bin/unshare are needed)")
        } else {
            print("namespace hosts cannot be made here (not root, or no iproute2/unshare): these tests run over loopback")
            namespaces = nil
        }
    }

    /// Host `host`'s address (127.0.0.1 on loopback).
    package func address(_ host: Int) -> String { namespaces?.addresses[host] ?? "127.0.0.1" }

    /// What runs a program inside host `host` (nothing on loopback).
    package func launcher(_ host: Int) -> [String] { namespaces?.launcher(host) ?? [] }

    /// Removes the hosts (every namespace, link and bridge).
    package func remove() { namespaces?.remove() }
}

package final class NamespaceHosts: Sendable {
    /// What the namespaces are called: `rlkt<run>-<role>`, the run being
    /// the test process's pid and how many hosts it made before (suites
    /// of several targets make hosts at the same time).
    static let prefix = "rlkt"
    private static let made = Locked(0)
    let run: String
    package let addresses: [String]
    let switchNamespace: String

    var namespaces: [String] { addresses.indices.map { hostNamespace($0) } }

    func hostNamespace(_ index: Int) -> String { "\(Self.prefix)\(run)-h\(index)" }

    /// Whether namespace hosts can be made here (root, iproute2, unshare).
    package static var available: Bool {
        getuid() == 0 && access("/usr/sbin/ip", X_OK) == 0 && access("/usr/bin/unshare", X_OK) == 0
    }

    /// Whether a test must not fall back to loopback (CI sets it).
    package static var required: Bool { getenv("RUNLOOPKIT_REQUIRE_NETNS").map { String(cString: $0) == "1" } ?? false }

    /// Makes `count` hosts at 10.x.y.1 … count on one bridge.
    package init(count: Int) throws {
        Self.removeLeftovers()
        let pid = getpid()
        let number = Self.made.withLock { made in
            defer { made += 1 }
            return made
        }
        run = "\(pid % 100_000).\(number)"
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

    /// What runs a program inside host `index`: its network namespace,
    /// then pid and mount namespaces of its own (its own /proc), killed
    /// with `unshare` (`--kill-child`).
    package func launcher(_ index: Int) -> [String] {
        ["/usr/sbin/ip", "netns", "exec", hostNamespace(index), "/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child"]
    }

    /// Takes host `index`'s link down (a partition: both ends live on) or up.
    package func setLink(_ index: Int, up: Bool) throws {
        try Self.ip(["-n", switchNamespace, "link", "set", "port\(index)", up ? "up" : "down"])
    }

    /// Removes every namespace (their links and the bridge go with them).
    package func remove() {
        for namespace in namespaces + [switchNamespace] { _ = try? Self.ip(["netns", "delete", namespace]) }
    }

    /// Namespaces of runs whose test process is gone.
    package static func removeLeftovers() {
        for name in PortProcess.directoryEntries("/run/netns") where name.hasPrefix(prefix) {
            let digits = name.dropFirst(prefix.count).prefix { $0.isNumber }
            guard let runPID = Int32(digits) else { continue }
            if runPID != getpid() % 100_000 && !PortProcess.directoryEntries("/proc").contains(String(runPID)) {
                _ = try? ip(["netns", "delete", name])
            }
        }
    }

    @discardableResult
    package static func ip(_ arguments: [String]) throws -> String {
        let directory = NetworkKeysFixture.shared.directory
        let program = try SpawnedProgram(path: "/usr/sbin/ip", arguments, in: directory)
        let status = program.waitForExit(timeout: 30)
        guard status == 0 else {
            throw TestFailure("ip \(arguments.joined(separator: " ")) failed (\(String(describing: status))): \(program.errorOutput)")
        }
        return program.output
    }
}
