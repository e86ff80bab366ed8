/// ZeroMQ inproc, within one process: the fastest transport, and the one a
/// process uses to reach its own ports whatever their route. Every local
/// port's receiver listens at its inproc endpoint.
enum InprocTransport {
    /// The endpoint of the port at `address`: unique to its process (pid
    /// and start time) and its port id.
    static func endpoint(for address: PortAddress) -> String {
        "inproc://runloopkit/\(address.pid)/\(address.startTime)/\(address.portID)"
    }

    /// Only its own process can reach an inproc port (S-PORT-8): a
    /// descriptor of another process's inproc port names nothing here.
    static func reachabilityProblem(_ address: PortAddress) -> PortError? {
        if address.isInThisProcess { return nil }
        return .unreachable(
            address.description, reason: "it is an inproc-only port of process \(address.pid); only its own process can send to it")
    }
}

extension PortAddress {
    /// The port's inproc endpoint (`InprocTransport.endpoint(for:)`).
    var inprocEndpoint: String { InprocTransport.endpoint(for: self) }
}
