internal import CLinuxSupport

/// What the tap shows of a distributed actor system's message
/// (docs/tap-format.md, "Actor calls"): a call, its reply or a
/// cancellation, with the call's id, the actor's number and the method's
/// name. RunLoopKitDistributed makes these, only while `isTapping`: with
/// the tap off, its messages cost what any message costs.
package struct TapActorCall: Sendable {
    /// What the message is to the call.
    package enum Role: UInt8, Sendable {
        case call = 1
        case reply = 2
        case cancellation = 3
    }

    /// A reply's outcome, as the record carries it (0 for other messages).
    package enum Outcome: UInt8, Sendable {
        case none = 0
        case value, void, typedError, remoteError, actorNotFound, badCall
    }

    /// A delivery its port left for its handler to record (the handler
    /// knows the call only once it has decoded the message).
    package struct DeferredDelivery: Sendable {
        let traceID: UInt64
    }

    private let note: rlk_tap_call

    /// `method` is the name to show (once per name, a label announced to
    /// readers); nil when the message does not say it.
    package init(_ role: Role, id: UInt64, actor: UInt64, method: String?, outcome: Outcome = .none) {
        note = rlk_tap_call(
            call: id, actor: actor, method: method.map { UInt32(TapNames.shared.reasonID($0)) } ?? 0,
            role: role.rawValue, outcome: outcome.rawValue)
    }

    /// Whether the tap records events now.
    package static var isTapping: Bool { PortTap.active.load(ordering: .relaxed) }

    /// Runs `send` with `call`, if any, noted on the calling thread: the
    /// send's tap record (or its failed send's) carries it.
    package static func noting<T, E: Error>(_ call: TapActorCall?, _ send: () throws(E) -> T) throws(E) -> T {
        guard var note = call?.note else { return try send() }
        rlk_tap_call_set(&note)
        defer { rlk_tap_call_clear() }
        return try send()
    }

    /// From now on `port`'s handler records each delivery itself
    /// (`takeDeferredDelivery` first thing, then `record`); set before the
    /// port receives.
    package static func recordDeliveriesInHandler(of port: Port) {
        port.tapDeliveryInHandler.store(true, ordering: .relaxed)
    }

    /// The delivery the port left for the handler now running: nil when
    /// it left none (the tap was off when the message came).
    package static func takeDeferredDelivery() -> DeferredDelivery? {
        var traceID: UInt64 = 0
        guard rlk_tap_take_deferred_delivery(&traceID) != 0 else { return nil }
        return DeferredDelivery(traceID: traceID)
    }

    /// Records the delivery of `message` on `port`, as `call` if known.
    package static func record(_ delivery: DeferredDelivery, of message: PortMessage, on port: Port, as call: TapActorCall?) {
        TapPipeline.shared.recordDelivery(
            message, on: port, traceID: delivery.traceID == 0 ? nil : delivery.traceID, call: call?.note)
    }
}
