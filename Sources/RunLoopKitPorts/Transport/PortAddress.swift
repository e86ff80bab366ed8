import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Where a port receives: the identity of its owning process (pid and the
/// process's start time, which together never repeat on one host, unlike a
/// pid alone; over tcp the process's instance, `ProcessInstance`, since
/// pids mean nothing across hosts), a number unique within that process,
/// and its route: the transport that reaches it and that transport's
/// endpoint (`PortRoute`). It is what a port descriptor carries on the
/// wire (docs/wire-format.md); a tcp descriptor's pid and start time are
/// for people reading logs, and identify nothing.
struct PortAddress: Hashable, Sendable, CustomStringConvertible {
    let pid: Int32
    let startTime: UInt64
    let portID: UInt64
    let route: PortRoute
    /// `route.reach`, stored: a send reads it for every port it carries.
    let reach: PortRoute.Reach

    init(pid: Int32, startTime: UInt64, portID: UInt64, route: PortRoute) {
        self.pid = pid
        self.startTime = startTime
        self.portID = portID
        self.route = route
        reach = route.reach
    }

    var process: ProcessIdentity { ProcessIdentity(pid: pid, startTime: startTime) }
    var isInThisProcess: Bool {
        if case let .tcp(endpoint) = route { return endpoint.instance == .current }
        return pid == ProcessIdentity.current.pid && startTime == ProcessIdentity.current.startTime
    }

    /// How far from this process the port is: a message to it may carry
    /// only ports whose reach is at least this (S-PORT-2). A tcp port of
    /// another process may be on another host, whatever its address says.
    var distance: PortRoute.Reach {
        if isInThisProcess { return .process }
        return reach == .network ? .network : .host
    }

    /// The same port: its identity (process and port id) and its route. Two
    /// descriptors that claim one identity at two ipc paths name two
    /// destinations (one of them lies), which must not share a send right.
    /// An ipc endpoint's host is left out (`IPCTransport.Endpoint`); a tcp
    /// port's pid and start time too (its instance, in its route, is its
    /// process's identity).
    static func == (lhs: PortAddress, rhs: PortAddress) -> Bool {
        guard lhs.portID == rhs.portID && lhs.route == rhs.route else { return false }
        return lhs.reach == .network || (lhs.pid == rhs.pid && lhs.startTime == rhs.startTime)
    }

    func hash(into hasher: inout Hasher) {
        if reach != .network {
            hasher.combine(pid)
            hasher.combine(startTime)
        }
        hasher.combine(portID)
        hasher.combine(route)
    }

    var description: String { "\(pid)/\(portID) \(route.whereabouts)" }
}
