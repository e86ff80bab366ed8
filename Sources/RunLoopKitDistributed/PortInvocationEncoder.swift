public import Distributed
import RunLoopKitPorts

/// Records a distributed call for `PortActorSystem`: its generic
/// substitutions (by mangled name) and its arguments, each a typed
/// payload's tree whose ports become the call message's port components.
public struct PortInvocationEncoder: DistributedTargetInvocationEncoder {
    /// What crosses is `Codable`.
    public typealias SerializationRequirement = Codable

    var generics: [String] = []
    var arguments: [PayloadValue] = []
    let context = PayloadEncoder.Context()

    init() {}

    /// Records a generic substitution by its mangled name.
    public mutating func recordGenericSubstitution<T>(_ type: T.Type) throws {
        guard let name = _mangledTypeName(type) else {
            throw PortActorSystemError.badCall("\(type) has no mangled name to send")
        }
        generics.append(name)
    }

    /// Records an argument: its tree, its ports added to the call's.
    public mutating func recordArgument<Value: Codable>(_ argument: RemoteCallArgument<Value>) throws {
        do {
            arguments.append(try PayloadEncoder.tree(of: argument.value, context: context))
        } catch {
            throw PortError.payload(error)
        }
    }

    /// Nothing to record: the callee knows the target's error type.
    public mutating func recordErrorType<E: Error>(_ type: E.Type) throws {}

    /// Nothing to record: the callee knows the target's return type.
    public mutating func recordReturnType<R: Codable>(_ type: R.Type) throws {}

    /// Nothing left to do.
    public mutating func doneRecording() throws {}
}

/// Reads a distributed call for `PortActorSystem`: its generic
/// substitutions and its arguments, in the order they were recorded.
public struct PortInvocationDecoder: DistributedTargetInvocationDecoder {
    /// What crosses is `Codable`.
    public typealias SerializationRequirement = Codable

    let generics: [String]
    let arguments: [PayloadValue]
    let ports: [Port]
    let system: PortActorSystem
    var next = 0

    init(call: ActorCallMessage.Call, ports: [Port], system: PortActorSystem) {
        generics = call.generics
        arguments = call.arguments
        self.ports = ports
        self.system = system
    }

    /// The call's generic substitutions, each found by its mangled name.
    public mutating func decodeGenericSubstitutions() throws -> [Any.Type] {
        try generics.map { name in
            guard let type = _typeByName(name) else { throw PortActorSystemError.badCall("no type of the mangled name \(name) here") }
            return type
        }
    }

    /// The next argument, as the target declares it.
    public mutating func decodeNextArgument<Argument: Codable>() throws -> Argument {
        guard next < arguments.count else { throw PortActorSystemError.badCall("\(arguments.count) arguments, the target takes more") }
        defer { next += 1 }
        do {
            return try PayloadDecoder.decode(Argument.self, from: arguments[next], ports: ports, userInfo: [.actorSystemKey: system])
        } catch {
            throw PortActorSystemError.badCall("argument \(next): \(error)")
        }
    }

    /// Not sent: the target's own declaration says it.
    public mutating func decodeErrorType() throws -> Any.Type? { nil }

    /// Not sent: the target's own declaration says it.
    public mutating func decodeReturnType() throws -> Any.Type? { nil }
}
