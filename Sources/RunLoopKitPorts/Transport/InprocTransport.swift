import ZeroMQ

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

extension InprocTransport {
    /// Connects a send channel's `socket` to `endpoint`; for a port of this
    /// process, only while `receiver`, its receiving side, is still bound.
    /// libzmq keeps a connect to an inproc endpoint that nobody binds
    /// pending, and never reaps a socket closed with a connect pending: its
    /// eventfd would stay open for the process's life. False, with nothing
    /// connected, once the receiver is closed: the port was invalidated
    /// after the send found it valid.
    static func connect(_ socket: Socket, to endpoint: String, receiver: PortReceiver?) throws(ZMQError) -> Bool {
        guard let receiver else {
            try socket.connect(endpoint)
            return true
        }
        return try receiver.whileOpen { () throws(ZMQError) in try socket.connect(endpoint) }
    }
}

extension PortAddress {
    /// The port's inproc endpoint (`InprocTransport.endpoint(for:)`).
    var inprocEndpoint: String { InprocTransport.endpoint(for: self) }
}
