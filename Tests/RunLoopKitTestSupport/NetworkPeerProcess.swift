// The tcp tests' other processes (`rlk-net-peer`, Tests/NetworkPeer, and
// `rlk-actor-peer`, Tests/ActorPeer) and the keys every process of a test
// run uses: the test process's own key pair and authorized-keys file, set
// once before its first tcp port, and a configuration directory per child
// with a key made here, so that the test knows every public key before any
// process starts. What is particular to `rlk-net-peer` (serving a port,
// its endpoint) is the port tests' (RunLoopKitPortsTests, Support).
import Glibc
import NetworkPeerSupport
import RunLoopKit
import RunLoopKitPorts
import ZeroMQ

/// The keys of the tcp tests' processes.
package final class NetworkKeysFixture: Sendable {
    package static let shared = NetworkKeysFixture()
    package let directory: String
    package let parent: CurveKeyPair
    /// Children 0 to 3 are listed in the authorized-keys file; 4 is not.
    package let children: [CurveKeyPair]
    package static let unlistedChild = 4
    package let authorizedKeysPath: String

    private init() {
        directory = makeTemporaryDirectory("rlk-net")
        parent = try! CurveKeyPair.generate()
        children = (0...4).map { _ in try! CurveKeyPair.generate() }
        authorizedKeysPath = directory + "/authorized_keys"
        let parentKey = directory + "/parent.key"
        Self.write(parentKey, parent.secretKey.z85 + "\n", mode: 0o600)
        for (index, pair) in children.enumerated() {
            let config = directory + "/child-\(index)/runloopkit"
            mkdir(directory + "/child-\(index)", 0o700)
            mkdir(config, 0o700)
            Self.write(config + "/curve.key", pair.secretKey.z85 + "\n", mode: 0o600)
        }
        writeAuthorizedKeys(except: [Self.unlistedChild])
        try! NetworkKeys.useKeyFile(at: parentKey)
        NetworkKeys.useAuthorizedKeysFile(at: authorizedKeysPath)
        atexit { PortProcess.removeTree(NetworkKeysFixture.shared.directory) }
    }

    /// Rewrites the authorized-keys file (by rename, as an operator's tool
    /// would) listing the parent and every child but `excluded`.
    package func writeAuthorizedKeys(except excluded: Set<Int>) {
        var text = "# the test process\n\(parent.publicKey.z85) parent\n"
        for (index, pair) in children.enumerated() where !excluded.contains(index) {
            text += "\(pair.publicKey.z85) child-\(index)\n"
        }
        let temporary = authorizedKeysPath + ".tmp"
        Self.write(temporary, text, mode: 0o644)
        rename(temporary, authorizedKeysPath)
    }

    /// The environment of child `index`: its own configuration directory
    /// (its key) and the shared authorized-keys file.
    package func environment(child index: Int) -> [String: String] {
        ["XDG_CONFIG_HOME": directory + "/child-\(index)", "RUNLOOPKIT_AUTHORIZED_KEYS": authorizedKeysPath,
         "RUNLOOPKIT_RUNTIME_DIR": directory + "/run-\(index)"]
    }

    /// Child `index`'s public key, as an operator copies it from its `curve.pub`.
    package func publicKeyText(child index: Int) -> String { children[index].publicKey.z85 }

    private static func write(_ path: String, _ text: String, mode: mode_t) {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        precondition(fd >= 0, "cannot create \(path)")
        _ = fchmod(fd, mode)
        let bytes = Array(text.utf8)
        _ = Glibc.write(fd, bytes, bytes.count)
        close(fd)
    }
}

/// A child of a tcp test (`rlk-net-peer` unless another program is named),
/// with a child's keys, on loopback or inside a namespace host.
package final class NetworkPeerProcess: Sendable {
    package let program: SpawnedProgram
    /// Started through a launcher (`unshare`, which ignores SIGTERM while
    /// it waits for its child): stopped with SIGKILL, which `--kill-child`
    /// passes on.
    private let isLaunched: Bool

    private init(_ program: SpawnedProgram, isLaunched: Bool = false) {
        self.program = program
        self.isLaunched = isLaunched
    }

    /// The environment of a child that is to find a silent peer dead by
    /// heartbeats in a test's time: 2 s of silence rather than the default.
    package static let shortHeartbeats = ["RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT": "2"]
    package static let shortHeartbeatTimeoutNanoseconds: UInt64 = 2_000_000_000

    /// Starts `program` (one of this package's, `rlk-net-peer` unless
    /// given) with `arguments` as child `child`, through `launcher` (a
    /// command that runs it inside a namespace host) if given, with
    /// `environment` added to the child's own.
    package static func start(
        _ arguments: [String], child: Int, program name: String = "rlk-net-peer", launcher: [String] = [],
        environment: [String: String] = [:]
    ) throws -> NetworkPeerProcess {
        let fixture = NetworkKeysFixture.shared
        let peer = SpawnedProgram.productsDirectory + "/" + name
        let variables = fixture.environment(child: child).merging(environment) { $1 }
        let program = launcher.isEmpty
            ? try SpawnedProgram(path: peer, arguments, environment: variables, in: fixture.directory)
            : try SpawnedProgram(path: launcher[0], Array(launcher.dropFirst()) + [peer] + arguments,
                                 environment: variables, in: fixture.directory)
        return NetworkPeerProcess(program, isLaunched: !launcher.isEmpty)
    }

    package var hasExited: Bool { kill(program.pid, 0) != 0 }

    /// Waits (at most `timeout` seconds, a safety net) until the child
    /// printed a line starting with `prefix`, or exited; returns the line
    /// without the prefix, nil if it exited without printing it.
    package func waitForLine(starting prefix: String, timeout: Double = 60) -> String? {
        waitUntil(timeout: timeout) { line(starting: prefix) != nil || hasExited }
        return line(starting: prefix)
    }

    /// The first line of output starting with `prefix`, without it.
    package func line(starting prefix: String) -> String? {
        program.output.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    package func lines(starting prefix: String) -> [String] {
        program.output.split(separator: "\n").filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    /// SIGTERM (SIGKILL through a launcher), then its exit status (nil if
    /// it had to be killed).
    @discardableResult
    package func stop() -> Int32? {
        if isLaunched {
            program.killAndReap()
            return nil
        }
        kill(program.pid, SIGTERM)
        return program.waitForExit(timeout: 30)
    }

    package static func hex(_ bytes: [UInt8]) -> String { NetworkPeerSupport.hex(bytes) }

    package static func bytes(fromHex text: String) -> [UInt8] { NetworkPeerSupport.bytes(fromHex: text) }
}
