// The tcp tests' other processes (`rlk-net-peer`, Tests/NetworkPeer) and
// the keys every process of a test run uses: the test process's own key
// pair and authorized-keys file, set once before its first tcp port, and a
// configuration directory per child with a key made here, so that the test
// knows every public key before any process starts.
import Glibc
import RunLoopKit
import ZeroMQ
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

/// The keys of the tcp tests' processes.
final class NetworkKeysFixture: Sendable {
    static let shared = NetworkKeysFixture()
    let directory: String
    let parent: CurveKeyPair
    /// Children 0 to 3 are listed in the authorized-keys file; 4 is not.
    let children: [CurveKeyPair]
    static let unlistedChild = 4
    let authorizedKeysPath: String

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
    func writeAuthorizedKeys(except excluded: Set<Int>) {
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
    func environment(child index: Int) -> [String: String] {
        ["XDG_CONFIG_HOME": directory + "/child-\(index)", "RUNLOOPKIT_AUTHORIZED_KEYS": authorizedKeysPath,
         "RUNLOOPKIT_RUNTIME_DIR": directory + "/run-\(index)"]
    }

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

/// An `rlk-net-peer` child: one serving a tcp port, or one calling one.
final class NetworkPeerProcess: Sendable {
    let program: SpawnedProgram
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
    static let shortHeartbeats = ["RUNLOOPKIT_TCP_HEARTBEAT_TIMEOUT": "2"]
    static let shortHeartbeatTimeoutNanoseconds: UInt64 = 2_000_000_000

    /// Starts `rlk-net-peer` with `arguments` as child `child`, through
    /// `launcher` (a command that runs it inside a namespace host) if given,
    /// with `environment` added to the child's own.
    static func start(
        _ arguments: [String], child: Int, launcher: [String] = [], environment: [String: String] = [:]
    ) throws -> NetworkPeerProcess {
        let fixture = NetworkKeysFixture.shared
        let peer = SpawnedProgram.productsDirectory + "/rlk-net-peer"
        let variables = fixture.environment(child: child).merging(environment) { $1 }
        let program = launcher.isEmpty
            ? try SpawnedProgram(path: peer, arguments, environment: variables, in: fixture.directory)
            : try SpawnedProgram(path: launcher[0], Array(launcher.dropFirst()) + [peer] + arguments,
                                 environment: variables, in: fixture.directory)
        return NetworkPeerProcess(program, isLaunched: !launcher.isEmpty)
    }

    /// A child serving a tcp port at `bind`; returns once it printed its descriptor.
    static func serve(
        child: Int, bind: String = "127.0.0.1", port: UInt16 = 0, plain: Bool = false, name: String? = nil, launcher: [String] = []
    ) throws -> NetworkPeerProcess {
        let options = (plain ? ["plain"] : []) + (name.map { ["name", $0] } ?? [])
        let peer = try start(["serve", bind, "\(port)"] + options, child: child, launcher: launcher)
        let program = peer.program
        guard waitUntil(timeout: 60, { peer.line(starting: "PORT ") != nil || peer.hasExited }) , peer.line(starting: "PORT ") != nil else {
            program.killAndReap()
            throw TestFailure("rlk-net-peer serve did not start: \(program.output) \(program.errorOutput)")
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

    var hasExited: Bool { kill(program.pid, 0) != 0 }

    /// The first line of output starting with `prefix`, without it.
    func line(starting prefix: String) -> String? {
        program.output.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    func lines(starting prefix: String) -> [String] {
        program.output.split(separator: "\n").filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    /// SIGTERM (SIGKILL through a launcher), then its exit status (nil if
    /// it had to be killed).
    @discardableResult
    func stop() -> Int32? {
        if isLaunched {
            program.killAndReap()
            return nil
        }
        kill(program.pid, SIGTERM)
        return program.waitForExit(timeout: 30)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16) }.map { $0.count == 1 ? "0" + $0 : $0 }.joined()
    }

    static func bytes(fromHex text: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = text.startIndex
        while let next = text.index(index, offsetBy: 2, limitedBy: text.endIndex), next > index {
            result.append(UInt8(text[index..<next], radix: 16) ?? 0)
            index = next
        }
        return result
    }
}
