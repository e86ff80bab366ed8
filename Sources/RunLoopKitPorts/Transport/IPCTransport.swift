import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// ZeroMQ ipc, between processes of one user on one host: a port listens
/// at a socket file in the per-user runtime directory (mode 0700, the file
/// 0600), named in its descriptor with its host's identity (S-PORT-8). The
/// death of a port's process is learned from the process itself (a pidfd,
/// `ProcessWatcher`) and, while a send waits, from its socket file.
enum IPCTransport {
    /// Where an ipc port listens: its socket path, and its host when known
    /// (a version-1 descriptor does not say). Two endpoints are the same
    /// when their paths are: a descriptor of one port with and without its
    /// host names that one port.
    struct Endpoint: Hashable, Sendable {
        let path: String
        let host: HostIdentity?

        static func == (lhs: Endpoint, rhs: Endpoint) -> Bool { lhs.path == rhs.path }
        func hash(into hasher: inout Hasher) { hasher.combine(path) }
    }

    /// A new local port's endpoint: a socket file of its own in the runtime
    /// directory, on this host.
    static func newEndpoint(portID: UInt64, process: ProcessIdentity) throws(PortError) -> Endpoint {
        Endpoint(path: try RuntimeDirectory.path() + "/p\(process.pid)-\(portID).sock", host: HostIdentity.current)
    }

    /// A descriptor's endpoint: an absolute UTF-8 path that fits a socket
    /// address (`WireFormat.maxIPCPathBytes`).
    static func decodedEndpoint(path: UnsafeRawBufferPointer, host: HostIdentity?) throws(WireFormat.DecodeError) -> Endpoint {
        guard !path.isEmpty, path.count <= WireFormat.maxIPCPathBytes else {
            throw .badDescriptor("ipc path of \(path.count) bytes (1 to \(WireFormat.maxIPCPathBytes) allowed)")
        }
        guard let text = String(validating: path, as: UTF8.self), text.hasPrefix("/"), !text.contains("\0") else {
            throw .badDescriptor("ipc path is not an absolute UTF-8 path")
        }
        return Endpoint(path: text, host: host)
    }

    static func zeroMQEndpoint(_ endpoint: Endpoint) -> String { "ipc://" + endpoint.path }

    /// What can be told at once: a port of another host, an owner process
    /// known dead, a socket path that is missing or refuses connections (a
    /// plain AF_UNIX connect, which answers at once, unlike libzmq's
    /// background connect). What only time tells (a listener that never
    /// completes the handshake) is the connection bound's (`SendChannel`).
    static func reachabilityProblem(_ address: PortAddress, _ endpoint: Endpoint) -> PortError? {
        if address.isInThisProcess { return nil }
        let port = address.description
        if let host = endpoint.host, let here = HostIdentity.current, !HostIdentity.isThisHost(host) {
            return .unreachable(port, reason: "it is an ipc port of another host (\(host)); its socket path means nothing on this one (\(here))")
        }
        if !address.process.isAlive {
            return .peerDied(pid: address.pid, port: port)
        }
        let path = endpoint.path
        switch probe(path) {
        case 0, EAGAIN, EINPROGRESS:
            return nil  // listening (a full backlog is back-pressure, not absence)
        case ENOENT:
            return .unreachable(port, reason: "no socket at \(path)")
        case ECONNREFUSED:
            return .unreachable(port, reason: "nothing listens at \(path)")
        case let code:
            return .unreachable(port, reason: "connect(\(path)): \(String(cString: strerror(code)))")
        }
    }

    /// A port of another process whose socket file is gone: closed by its
    /// live owner (`.invalidPort`), or its owner died (`.peerDied`). A
    /// zombie is a dead peer: its socket file may already have been swept
    /// by another process.
    static func vanished(_ address: PortAddress, _ endpoint: Endpoint, described description: String) -> PortError? {
        guard !address.isInThisProcess, access(endpoint.path, F_OK) != 0 else { return nil }
        return address.process.isRunning ? .invalidPort(description) : .peerDied(pid: address.pid, port: description)
    }

    /// A non-blocking AF_UNIX connect to `path`: 0 or the errno it failed with.
    private static func probe(_ path: String) -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return ENAMETOOLONG }
        withUnsafeMutableBytes(of: &address.sun_path) { buffer in
            for (index, byte) in bytes.enumerated() { buffer[index] = byte }
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        return result == 0 ? 0 : errno
    }
}

extension PortAddress {
    /// An address by its ipc path: `.ipc` with `hostID` when there is a
    /// path, `.inproc` when it is nil.
    init(pid: Int32, startTime: UInt64, portID: UInt64, ipcPath: String?, hostID: HostIdentity? = nil) {
        self.init(pid: pid, startTime: startTime, portID: portID,
                  route: ipcPath.map { .ipc(IPCTransport.Endpoint(path: $0, host: hostID)) } ?? .inproc)
    }

    /// The ipc socket path; nil for a port reachable only within its process.
    var ipcPath: String? {
        if case let .ipc(endpoint) = route { endpoint.path } else { nil }
    }

    /// The host of an ipc port (S-PORT-8); nil for an inproc port, and for
    /// one named by a version-1 descriptor, which does not say.
    var hostID: HostIdentity? {
        if case let .ipc(endpoint) = route { endpoint.host } else { nil }
    }

    var ipcEndpoint: String? {
        if case let .ipc(endpoint) = route { IPCTransport.zeroMQEndpoint(endpoint) } else { nil }
    }
}
