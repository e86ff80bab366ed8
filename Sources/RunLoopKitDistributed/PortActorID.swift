public import RunLoopKitPorts

/// A distributed actor's identity in a `PortActorSystem`: the port its
/// system receives calls on (a send right, within a process, across
/// processes or across hosts, as the port's transport allows) and the
/// actor's number in that system. It travels in a typed payload as a port
/// component and a number, so that an actor passed as an argument arrives
/// as a reference the receiver can call.
public struct PortActorID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The port the actor's system receives calls on.
    public let system: Port
    /// The actor's number in its system, never reused while the system lives.
    public let number: UInt64

    /// An identity; systems make them (`PortActorSystem.assignID`).
    public init(system: Port, number: UInt64) {
        self.system = system
        self.number = number
    }

    /// `actor N at <the system's port>`.
    public var description: String { "actor \(number) at \(system)" }
}
