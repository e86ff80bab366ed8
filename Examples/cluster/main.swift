// cluster: ports across machines (docs/ports.md, "Across machines"). A
// directory on one host, two workers on two others, and a client on a
// fourth: hosts made of network namespaces when this runs as root (with
// iproute2 and util-linux), else processes on this host's loopback; it
// says which. Started alone, it sets the hosts up as a deployment would:
// each host's key pair made on its first run (in its own configuration
// directory, kept for later runs), one authorized-keys file listing every
// host's key, copied to every host. Then the directory registers the name
// "directory", the workers look it up over tcp (S-NET-4) and register
// their ports with it, and the client looks it up, asks it for the
// workers, fans its requests out to them at once and gathers the replies.
//
//   cluster [--loopback] [--requests N] [--dir DIRECTORY]
//
// DIRECTORY (default: <temporary directory>/rlk-cluster-<uid>) holds each
// host's configuration and runtime directories and the authorized-keys file.
// The roles it starts (this same program): `key`, `directory`, `worker`, `client`.
import Foundation
import RunLoopKit

let hostNames = ["names", "worker-1", "worker-2", "client"]
let directoryPort: UInt16 = 7100

func orchestrate(loopback: Bool, requests: Int, directory: String) throws -> Int32 {
    mkdir(directory, 0o700)
    let hosts = try Hosts(names: hostNames, directory: directory, loopback: loopback)
    defer { hosts.remove() }
    say(hosts.usesNamespaces
        ? "hosts: network namespaces joined by a bridge (running as root): \(zip(hostNames, hosts.addresses).map { "\($0) \($1)" }.joined(separator: ", "))"
        : "hosts: processes on this host's loopback, 127.0.0.1 (\(loopback ? "--loopback" : "not root, or no iproute2 and util-linux"))")

    // Each host's key pair, made on its first run; every key in one
    // authorized-keys file, copied to every host.
    var authorized = "# RunLoopKit cluster: one line per host, its public key and its name\n"
    var keys: [String] = []
    for host in hostNames.indices {
        let existed = access(hosts.config(host) + "/runloopkit/curve.key", F_OK) == 0
        let key = try hosts.run(host, ["key"]).trimmingCharacters(in: .whitespacesAndNewlines)
        keys.append(key)
        authorized += "\(key) \(hostNames[host])\n"
        say("key of \(hostNames[host]): \(key) (\(existed ? "kept from an earlier run" : "made now"))")
    }
    try authorized.write(toFile: directory + "/authorized_keys", atomically: true, encoding: .utf8)
    for host in hostNames.indices {
        let copy = hosts.config(host) + "/runloopkit/authorized_keys"
        try? FileManager.default.removeItem(atPath: copy)
        try FileManager.default.copyItem(atPath: directory + "/authorized_keys", toPath: copy)
        chmod(copy, 0o644)
    }
    say("authorized_keys (\(directory)/authorized_keys), copied to every host:\n\(authorized)", terminator: "")

    var started: [Child] = []
    defer {
        for child in started {
            // Through `unshare`, which waits for its child, only SIGKILL ends it (and, with --kill-child, the child).
            kill(child.pid, hosts.usesNamespaces ? SIGKILL : SIGTERM)
            child.wait()
        }
    }
    let endpoint = "tcp://\(hosts.addresses[0]):\(directoryPort)"
    started.append(try hosts.start(0, ["directory", hosts.addresses[0], "\(directoryPort)"]))
    guard started[0].waitForLine("READY", seconds: 30) else { throw ClusterError("the directory did not start within 30 s") }
    for host in 1...2 {
        started.append(try hosts.start(host, ["worker", hostNames[host], hosts.addresses[host], endpoint, keys[0]]))
        guard started[host].waitForLine("READY", seconds: 30) else { throw ClusterError("\(hostNames[host]) did not start within 30 s") }
    }
    let status = try hosts.start(3, ["client", endpoint, keys[0], "2", "\(requests)"]).wait()
    say("client exited with status \(status)")
    return status
}

func say(_ text: String, terminator: String) {
    FileHandle.standardOutput.write(Data((text + terminator).utf8))
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "key":
        try Roles.key()
    case "directory" where arguments.count == 3:
        try Roles.directory(bind: arguments[1], port: UInt16(arguments[2]) ?? directoryPort)
    case "worker" where arguments.count == 5:
        try Roles.worker(name: arguments[1], bind: arguments[2], directory: arguments[3], key: arguments[4])
    case "client" where arguments.count == 5:
        try await Roles.client(directory: arguments[1], key: arguments[2], workers: Int(arguments[3]) ?? 2, requests: Int(arguments[4]) ?? 100)
    default:
        var loopback = false
        var requests = 1_000
        var directory = NSTemporaryDirectory() + "rlk-cluster-\(getuid())"
        var rest = arguments[...]
        while let option = rest.popFirst() {
            switch option {
            case "--loopback": loopback = true
            case "--requests": requests = rest.popFirst().flatMap { Int($0) } ?? requests
            case "--dir": directory = rest.popFirst() ?? directory
            default:
                say("usage: cluster [--loopback] [--requests N] [--dir DIRECTORY]")
                exit(2)
            }
        }
        exit(try orchestrate(loopback: loopback, requests: max(requests, 1), directory: directory))
    }
} catch {
    say("cluster: \(error)")
    exit(1)
}
