import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Whether a port of another process can be reached from here at all
/// (S-PORT-8), decided once, on the first send to it, never while a message
/// is decoded: a descriptor that arrived in a message is only a claim.
///
/// What it can tell at once, it does: an inproc-only port of another
/// process, an ipc port of another host, an owner process known dead, an
/// ipc path that is missing or refuses connections (a plain AF_UNIX
/// connect, which answers at once, unlike libzmq's background connect).
/// What only time tells (a listener that never completes the handshake) is
/// the connection bound's (`SendChannel`).
enum Reachability {
    /// Why the port at `address` cannot be reached from this process, or nil.
    static func problem(with address: PortAddress) -> PortError? {
        if address.isInThisProcess { return nil }
        let port = address.description
        guard let path = address.ipcPath else {
            return .unreachable(port, reason: "it is an inproc-only port of process \(address.pid); only its own process can send to it")
        }
        if let host = address.hostID, let here = HostIdentity.current, !HostIdentity.isThisHost(host) {
            return .unreachable(port, reason: "it is an ipc port of another host (\(host)); its socket path means nothing on this one (\(here))")
        }
        if !ProcessIdentity(pid: address.pid, startTime: address.startTime).isAlive {
            return .peerDied(pid: address.pid, port: port)
        }
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
