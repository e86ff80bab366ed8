public import Distributed
import RunLoopKitPorts

/// Sends a served call's outcome to its caller's reply port: the value (its
/// ports as port components), nothing for a void target, or the error
/// (as itself when it is `Codable`, for the caller's system to decode if
/// it allows the type; always with its type's name and description).
public struct PortResultHandler: DistributedTargetInvocationResultHandler {
    /// What crosses is `Codable`.
    public typealias SerializationRequirement = Codable

    let system: PortActorSystem
    let callID: UInt64
    /// The actor and the target called, for the tap's view of the reply.
    let actor: UInt64
    let target: String
    let replyPort: Port?

    /// Sends the target's value.
    public func onReturn<Success: Codable>(value: Success) async throws {
        let context = PayloadEncoder.Context()
        do {
            let tree = try PayloadEncoder.tree(of: value, context: context)
            system.reply(callID, .value(tree), ports: context.ports, to: replyPort, actor: actor, target: target)
        } catch {
            system.reply(callID, .remoteError(type: "RunLoopKitPorts.PayloadError", description: "the result could not be encoded: \(error)"),
                         ports: [], to: replyPort, actor: actor, target: target)
        }
    }

    /// Says that a void target returned.
    public func onReturnVoid() async throws {
        system.reply(callID, .void, ports: [], to: replyPort, actor: actor, target: target)
    }

    /// Sends the target's error.
    public func onThrow<Err: Error>(error: Err) async throws {
        system.reply(callID, PortResultHandler.outcome(of: error), to: replyPort, actor: actor, target: target)
    }

    /// An error as a reply says it: typed when it is `Codable` (and encodes),
    /// else described.
    static func outcome(of thrown: any Error) -> (ActorCallMessage.Outcome, [Port]) {
        // What a generic `Err` of `any Error` hands over is an existential
        // inside an existential; through `Any` the cast reaches the error.
        let error = (thrown as Any) as! any Error
        let type = dynamicTypeName(of: error)
        if let codable = error as? any Error & Codable {
            let context = PayloadEncoder.Context()
            if let tree = try? PayloadEncoder.tree(of: codable, context: context) {
                return (.typedError(type: type, value: tree, description: "\(error)"), context.ports)
            }
        }
        return (.remoteError(type: type, description: "\(error)"), [])
    }

    /// The name of the error's own type (`Error` conforms to itself, so a
    /// generic function would take `any Error` as it is, without opening it).
    private static func dynamicTypeName(of error: any Error) -> String {
        Payload.typeName(ofDynamic: type(of: error as Any))
    }
}
