import Distributed
@_spi(RunLoopKitInternals) import RunLoopKitCore
import RunLoopKitPorts

/// What the port tap shows of a system's messages (docs/tap-format.md,
/// "Actor calls"): each call, reply and cancellation carries the call's
/// id, the actor's number and the method's name, so that `portsniff`
/// shows a call and its reply by what they call. Made only while the tap
/// is on.
enum ActorCallTap {
    /// Each target's name as Swift prints it, demangled once per target.
    private static let methods = Locked<[String: String]>([:])

    /// The method a target's mangled identifier names (`Greeter.greet(name:)`),
    /// or the identifier when it does not demangle.
    static func method(_ identifier: String) -> String {
        if let known = methods.withLock({ $0[identifier] }) { return known }
        let name = shortName(RemoteCallTarget(identifier).description)
        methods.withLock { $0[identifier] = name }
        return name
    }

    /// `Module.Type.method(label:)` without the module, as a reader names
    /// a method in a line of its own.
    private static func shortName(_ full: String) -> String {
        guard let paren = full.firstIndex(of: "("),
              let dot = full[..<paren].firstIndex(of: ".") else { return full }
        return String(full[full.index(after: dot)...])
    }

    /// A call about to be sent or just received; nil while the tap is off.
    static func call(_ role: TapActorCall.Role, id: UInt64, actor: UInt64, target: String?) -> TapActorCall? {
        guard TapActorCall.isTapping else { return nil }
        return TapActorCall(role, id: id, actor: actor, method: target.map(method))
    }

    /// A reply with its outcome; nil while the tap is off.
    static func reply(id: UInt64, actor: UInt64, target: String?, outcome: ActorCallMessage.Outcome) -> TapActorCall? {
        guard TapActorCall.isTapping else { return nil }
        return TapActorCall(.reply, id: id, actor: actor, method: target.map(method), outcome: tapOutcome(outcome))
    }

    private static func tapOutcome(_ outcome: ActorCallMessage.Outcome) -> TapActorCall.Outcome {
        switch outcome {
        case .value: .value
        case .void: .void
        case .typedError: .typedError
        case .remoteError: .remoteError
        case .actorNotFound: .actorNotFound
        case .badCall: .badCall
        }
    }
}

/// A delivery its port left to the system's handler (the handler knows
/// the call only once it has decoded it): recorded once, as soon as the
/// handler knows what the message is, so that a reply it sends comes after
/// it; as a plain message if it never finds out.
struct DeferredTapDelivery: ~Copyable {
    private var delivery: TapActorCall.DeferredDelivery?
    private let message: PortMessage
    private let port: Port

    /// Taken first thing in the handler: a handler may run a nested
    /// delivery of its own.
    init(of message: PortMessage, on port: Port) {
        delivery = TapActorCall.takeDeferredDelivery()
        self.message = message
        self.port = port
    }

    /// Whether the tap still waits for this delivery's record.
    var isPending: Bool { delivery != nil }

    mutating func record(as call: TapActorCall?) {
        guard let delivery else { return }
        TapActorCall.record(delivery, of: message, on: port, as: call)
        self.delivery = nil
    }
}
