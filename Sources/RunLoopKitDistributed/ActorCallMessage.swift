import FoundationEssentials
import RunLoopKitPorts

/// The messages of a `PortActorSystem` (docs/distributed-actors.md): a
/// call, its reply and a cancellation, each a typed payload whose tree is
/// made here, so that the arguments' and the result's ports are the
/// message's port components.
enum ActorCallMessage {
    static let callMsgid: UInt32 = 0x5241_0001
    static let replyMsgid: UInt32 = 0x5241_0002
    static let cancelMsgid: UInt32 = 0x5241_0003
    static let nameMsgid: UInt32 = 0x5241_0004

    static let callType = "RunLoopKit.ActorCall"
    static let replyType = "RunLoopKit.ActorReply"
    static let cancelType = "RunLoopKit.ActorCancel"

    /// A call: which call of its caller, to which actor, which target,
    /// with what generic substitutions and arguments, and how long the
    /// caller waits.
    struct Call {
        var id: UInt64
        var actor: UInt64
        var target: String
        var generics: [String]
        var arguments: [PayloadValue]
        var timeoutNanoseconds: UInt64
    }

    /// How a call ended, as its reply says.
    enum Outcome {
        case value(PayloadValue)
        case void
        /// An error of a type the callee's side sends as itself: its type
        /// name and its value.
        case typedError(type: String, value: PayloadValue, description: String)
        /// Any other error: its type's name and description.
        case remoteError(type: String, description: String)
        case actorNotFound
        case badCall(String)
    }

    static func components(_ call: Call, ports: [Port]) -> [PortMessage.Component] {
        let tree = PayloadValue.keyed([
            .init("call", .uint(call.id)), .init("actor", .uint(call.actor)), .init("target", .string(call.target)),
            .init("generics", .array(call.generics.map { .string($0) })), .init("arguments", .array(call.arguments)),
            .init("timeout", .uint(call.timeoutNanoseconds)),
        ])
        return payload(tree, callType, ports)
    }

    static func components(reply id: UInt64, _ outcome: Outcome, ports: [Port]) -> [PortMessage.Component] {
        var entries: [PayloadValue.Entry] = [.init("call", .uint(id))]
        switch outcome {
        case let .value(value): entries += [.init("outcome", .string("value")), .init("value", value)]
        case .void: entries += [.init("outcome", .string("void"))]
        case let .typedError(type, value, description):
            entries += [.init("outcome", .string("typedError")), .init("type", .string(type)), .init("value", value),
                        .init("description", .string(description))]
        case let .remoteError(type, description):
            entries += [.init("outcome", .string("remoteError")), .init("type", .string(type)), .init("description", .string(description))]
        case .actorNotFound: entries += [.init("outcome", .string("actorNotFound"))]
        case let .badCall(reason): entries += [.init("outcome", .string("badCall")), .init("description", .string(reason))]
        }
        return payload(.keyed(entries), replyType, ports)
    }

    static func components(cancel id: UInt64) -> [PortMessage.Component] {
        payload(.keyed([.init("call", .uint(id))]), cancelType, [])
    }

    private static func payload(_ tree: PayloadValue, _ type: String, _ ports: [Port]) -> [PortMessage.Component] {
        [.data(Data(Payload.bytes(of: tree, typeName: type, encoding: .binary)))] + ports.map { .port($0) }
    }

    /// A message's tree, if its payload is of `type`, and its ports.
    static func read(_ message: PortMessage, as type: String) throws(PayloadError) -> (PayloadValue, [Port]) {
        guard case let .data(data)? = message.components.first else { throw .notAPayload("no payload") }
        let ports = message.components.dropFirst().compactMap { component -> Port? in
            if case let .port(port) = component { port } else { nil }
        }
        let read = data.withUnsafeBytes { bytes in
            Result { () throws(PayloadError) -> PayloadValue in
                let header = try Payload.readHeader(bytes)
                guard header.typeName == type else { throw .wrongType(expected: type, found: header.typeName) }
                return try Payload.tree(bytes, header)
            }
        }
        return (try read.get(), ports)
    }

    static func call(from tree: PayloadValue) throws(PayloadError) -> Call {
        let fields = try keyed(tree)
        guard case let .uint(id)? = fields["call"], case let .uint(actor)? = fields["actor"], case let .string(target)? = fields["target"],
              case let .array(generics)? = fields["generics"], case let .array(arguments)? = fields["arguments"],
              case let .uint(timeout)? = fields["timeout"]
        else { throw .malformed("an actor call without its fields") }
        var names: [String] = []
        for generic in generics {
            guard case let .string(name) = generic else { throw .malformed("a generic substitution that is not a name") }
            names.append(name)
        }
        return Call(id: id, actor: actor, target: target, generics: names, arguments: arguments, timeoutNanoseconds: timeout)
    }

    static func reply(from tree: PayloadValue) throws(PayloadError) -> (id: UInt64, outcome: Outcome) {
        let fields = try keyed(tree)
        guard case let .uint(id)? = fields["call"], case let .string(kind)? = fields["outcome"] else {
            throw .malformed("an actor reply without its call and outcome")
        }
        let text = { (key: String) -> String in if case let .string(text)? = fields[key] { text } else { "" } }
        switch kind {
        case "value": return (id, .value(fields["value"] ?? .null))
        case "void": return (id, .void)
        case "typedError": return (id, .typedError(type: text("type"), value: fields["value"] ?? .null, description: text("description")))
        case "remoteError": return (id, .remoteError(type: text("type"), description: text("description")))
        case "actorNotFound": return (id, .actorNotFound)
        case "badCall": return (id, .badCall(text("description")))
        default: throw .malformed("an actor reply's outcome \(kind)")
        }
    }

    static func cancelled(from tree: PayloadValue) throws(PayloadError) -> UInt64 {
        guard case let .uint(id)? = try keyed(tree)["call"] else { throw .malformed("a cancellation without its call") }
        return id
    }

    private static func keyed(_ tree: PayloadValue) throws(PayloadError) -> [String: PayloadValue] {
        guard case let .keyed(entries) = tree else { throw .malformed("an actor message that is not a keyed container") }
        return Dictionary(entries.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
    }
}
