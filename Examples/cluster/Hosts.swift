import Foundation
import RunLoopKit

/// The cluster's hosts: network namespaces joined by a bridge, each with
/// its own address, pid and mount namespaces (when this runs as root with
/// iproute2 and util-linux), or processes on this host's loopback. Every
/// host has its own configuration directory (its key pair and its copy of
/// the authorized-keys file) and runtime directory, as separate machines
/// would.
final class Hosts {
    let names: [String]
    let addresses: [String]
    let usesNamespaces: Bool
    let directory: String
    private let tag = "rlkc\(getpid() % 100_000)"

    init(names: [String], directory: String, loopback: Bool) throws {
        self.names = names
        self.directory = directory
        usesNamespaces = !loopback && getuid() == 0
            && access("/usr/sbin/ip", X_OK) == 0 && access("/usr/bin/unshare", X_OK) == 0
        if usesNamespaces {
            let subnet = "10.77.\(getpid() % 250)"
            addresses = names.indices.map { "\(subnet).\($0 + 1)" }
        } else {
            addresses = names.map { _ in "127.0.0.1" }
        }
        for name in names {
            for sub in ["", "/config", "/config/runloopkit", "/run"] {
                mkdir(directory + "/" + name + sub, 0o700)
            }
        }
        // Sniffed (`portsniff -- cluster`, RUNLOOPKIT_TAP=1): every host
        // reports to the sniffers this program was started among, through
        // a link where its own runtime directory keeps its readers.
        if ProcessInfo.processInfo.environment["RUNLOOPKIT_TAP"] == "1", let readers = try? PortTap.readersDirectory() {
            for name in names {
                try? FileManager.default.removeItem(atPath: "\(directory)/\(name)/run/tap")
                symlink(readers, "\(directory)/\(name)/run/tap")
            }
        }
        if usesNamespaces { try makeNamespaces() }
    }

    func config(_ host: Int) -> String { "\(directory)/\(names[host])/config" }

    /// The environment a process of `host` runs with: its own directories.
    func environment(_ host: Int) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_CONFIG_HOME"] = config(host)
        environment["RUNLOOPKIT_RUNTIME_DIR"] = "\(directory)/\(names[host])/run"
        environment.removeValue(forKey: "RUNLOOPKIT_KEY_FILE")
        environment.removeValue(forKey: "RUNLOOPKIT_AUTHORIZED_KEYS")
        return environment
    }

    /// Starts this program with `arguments` on `host`.
    func start(_ host: Int, _ arguments: [String], forward: Bool = true) throws -> Child {
        let program = CommandLine.arguments[0].hasPrefix("/")
            ? CommandLine.arguments[0] : FileManager.default.currentDirectoryPath + "/" + CommandLine.arguments[0]
        if usesNamespaces {
            return try Child("/usr/sbin/ip", ["netns", "exec", namespace(host), "/usr/bin/unshare", "--pid", "--fork", "--mount-proc", "--kill-child", program] + arguments,
                             environment: environment(host), forward: forward)
        }
        return try Child(program, arguments, environment: environment(host), forward: forward)
    }

    /// Runs this program with `arguments` on `host` to its end: its output.
    func run(_ host: Int, _ arguments: [String]) throws -> String {
        let child = try start(host, arguments, forward: false)
        let status = child.wait()
        guard status == 0 else {
            throw ClusterError("\(arguments.joined(separator: " ")) on \(names[host]) exited with \(status)")
        }
        return child.text
    }

    /// Removes the namespaces (nothing to do on loopback).
    func remove() {
        guard usesNamespaces else { return }
        for host in names.indices { try? Self.ip(["netns", "delete", namespace(host)]) }
        try? Self.ip(["netns", "delete", "\(tag)-sw"])
    }

    private func namespace(_ host: Int) -> String { "\(tag)-\(names[host])" }

    /// One namespace per host, its eth0 a veth whose other end is a port
    /// of a bridge in a namespace of its own: nothing touches this
    /// machine's own network.
    private func makeNamespaces() throws {
        let bridge = "\(tag)-sw"
        do {
            try Self.ip(["netns", "add", bridge])
            try Self.ip(["-n", bridge, "link", "add", "br0", "type", "bridge"])
            try Self.ip(["-n", bridge, "link", "set", "br0", "up"])
            for host in names.indices {
                try Self.ip(["netns", "add", namespace(host)])
                try Self.ip(["link", "add", "eth0", "netns", namespace(host), "type", "veth", "peer", "name", "port\(host)", "netns", bridge])
                try Self.ip(["-n", namespace(host), "addr", "add", addresses[host] + "/24", "dev", "eth0"])
                try Self.ip(["-n", namespace(host), "link", "set", "eth0", "up"])
                try Self.ip(["-n", namespace(host), "link", "set", "lo", "up"])
                try Self.ip(["-n", bridge, "link", "set", "port\(host)", "master", "br0", "up"])
            }
        } catch {
            remove()
            throw error
        }
    }

    private static func ip(_ arguments: [String]) throws {
        let status = try Child("/usr/sbin/ip", arguments, environment: ProcessInfo.processInfo.environment).wait()
        guard status == 0 else { throw ClusterError("ip \(arguments.joined(separator: " ")) failed") }
    }
}

struct ClusterError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
