import RunLoopKit

/// How portsniff names a distributed actor's message in a line: what it is
/// to its call, the call's number, the method, and for a reply how it
/// ended: "call #17 Greeter.greet(name:) actor 3", "reply #17
/// Greeter.greet(name:) value", "cancel #17 Greeter.greet(name:)".
extension PortTapEvent.ActorCall {
    var text: String {
        let method = method ?? "?"
        switch role {
        case .call: return "call #\(id) \(method) actor \(actor)"
        case .reply: return "reply #\(id) \(method) \(outcome.rawValue)"
        case .cancellation: return "cancel #\(id) \(method)"
        }
    }
}
