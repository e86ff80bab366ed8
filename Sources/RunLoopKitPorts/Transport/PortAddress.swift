import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Where a port receives: the identity of its owning process (pid and the
/// process's start time, which together never repeat, unlike a pid alone),
/// a number unique within that process, and its route: the transport that
/// reaches it and that transport's endpoint (`PortRoute`). It is what a
/// port descriptor carries on the wire (docs/wire-format.md).
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
    var isInThisProcess: Bool { pid == ProcessIdentity.current.pid && startTime == ProcessIdentity.current.startTime }

    /// How far from this process the port is: a message to it may carry
    /// only ports whose reach is at least this (S-PORT-2).
    var distance: PortRoute.Reach { isInThisProcess ? .process : .host }

    /// The same port: its identity (process and port id) and its route. Two
    /// descriptors that claim one identity at two ipc paths name two
    /// destinations (one of them lies), which must not share a send right.
    /// An ipc endpoint's host is left out (`IPCTransport.Endpoint`).
    static func == (lhs: PortAddress, rhs: PortAddress) -> Bool {
        lhs.pid == rhs.pid && lhs.startTime == rhs.startTime && lhs.portID == rhs.portID && lhs.route == rhs.route
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(pid)
        hasher.combine(startTime)
        hasher.combine(portID)
        hasher.combine(route)
    }

    var description: String { "\(pid)/\(portID) \(route.whereabouts)" }
}
