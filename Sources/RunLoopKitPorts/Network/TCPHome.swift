import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What a process says of itself when a tcp connection opens, in the
/// second frame of its hello or welcome (docs/wire-format.md, "Home
/// frames and relative descriptors"): its pid and start time (for people,
/// as in its descriptors), and the endpoints it listens at, in order.
/// Sending one says the process reads version-4 descriptors; having read
/// the peer's, a process writes its own tcp ports as version 4 over that
/// connection: the port's id and its endpoint's position here, 16 bytes
/// where a full descriptor takes about a hundred, which CURVE would
/// encrypt and authenticate at every request that carries a reply port.
///
/// Immutable: read by any port's decoder, on any loop.
final class TCPHome: Sendable {
    /// An endpoint as descriptors carry it.
    struct Listener: Equatable, Sendable {
        /// `tcp://host:port`.
        let endpoint: String
        /// Its CURVE public key; nil for plain text.
        let serverKey: CurveKey?
    }

    /// The process the home is of: the instance its hello or welcome named.
    let instance: ProcessInstance
    let pid: Int32
    let startTime: UInt64
    let listeners: [Listener]

    /// The home's address, as `IncomingFrames.senderTag` holds it.
    var tag: UInt { UInt(bitPattern: ObjectIdentifier(self)) }

    init(instance: ProcessInstance, pid: Int32, startTime: UInt64, listeners: [Listener]) {
        self.instance = instance
        self.pid = pid
        self.startTime = startTime
        self.listeners = listeners
    }

    /// The address of port `portID` of this process, behind the endpoint
    /// at `position` (`WireFormat.noListener`: a port of a process that
    /// listens nowhere): the address its full descriptor gives.
    func address(portID: UInt64, listener position: UInt8) throws(WireFormat.DecodeError) -> PortAddress {
        var listener: Listener?
        if position != WireFormat.noListener {
            guard Int(position) < listeners.count else {
                throw .badDescriptor("version 4 names endpoint \(position) of a sender that said it has \(listeners.count)")
            }
            listener = listeners[Int(position)]
        }
        let endpoint = TCPTransport.Endpoint(instance: instance, listener: listener?.endpoint, serverKey: listener?.serverKey)
        return PortAddress(pid: pid, startTime: startTime, portID: portID, route: .tcp(endpoint))
    }
}
