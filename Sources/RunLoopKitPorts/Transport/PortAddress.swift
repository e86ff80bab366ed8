import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Where a port receives: the identity of its owning process (pid and the
/// process's start time, which together never repeat, unlike a pid alone),
/// a number unique within that process, and, for a port other processes can
/// reach, its ipc socket path. It is what a port descriptor carries on the
/// wire (docs/wire-format.md).
struct PortAddress: Hashable, Sendable, CustomStringConvertible {
    let pid: Int32
    let startTime: UInt64
    let portID: UInt64
    /// The ipc socket path; nil for a port reachable only within its process.
    let ipcPath: String?
    /// The host of an ipc port (S-PORT-8); nil for an inproc port, and for
    /// one named by a version-1 descriptor, which does not say.
    let hostID: HostIdentity?

    init(pid: Int32, startTime: UInt64, portID: UInt64, ipcPath: String?, hostID: HostIdentity? = nil) {
        self.pid = pid
        self.startTime = startTime
        self.portID = portID
        self.ipcPath = ipcPath
        self.hostID = hostID
    }

    var inprocEndpoint: String { "inproc://runloopkit/\(pid)/\(startTime)/\(portID)" }
    var ipcEndpoint: String? { ipcPath.map { "ipc://" + $0 } }
    var isInThisProcess: Bool { pid == ProcessIdentity.current.pid && startTime == ProcessIdentity.current.startTime }

    /// The same port: its identity (process and port id) and its ipc path.
    /// Two descriptors that claim one identity at two paths name two
    /// destinations (one of them lies), which must not share a send right.
    /// The host id is left out: a version-1 descriptor of a port does not
    /// carry it, a version-2 one does, and both name that port.
    static func == (lhs: PortAddress, rhs: PortAddress) -> Bool {
        lhs.pid == rhs.pid && lhs.startTime == rhs.startTime && lhs.portID == rhs.portID && lhs.ipcPath == rhs.ipcPath
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(pid)
        hasher.combine(startTime)
        hasher.combine(portID)
        hasher.combine(ipcPath)
    }

    var description: String { ipcPath.map { "\(pid)/\(portID) at \($0)" } ?? "\(pid)/\(portID) (inproc)" }
}
