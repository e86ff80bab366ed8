public import RunLoopKitPorts

/// Why a call through a `PortActorSystem` failed, other than the callee's
/// own error of an allowed type (which is thrown as itself).
public enum PortActorSystemError: Error, Equatable, Sendable, CustomStringConvertible {
    /// No actor with this identity lives in its system: it resigned, or
    /// never existed there.
    case actorNotFound(String)
    /// The callee threw an error whose type is not on the caller's system's
    /// list of errors it decodes (`PortActorSystem.allowErrorType`), or is
    /// not `Codable`: its type's name and description, as text.
    case remoteError(type: String, description: String)
    /// The call did not finish within its deadline
    /// (`PortActorSystem.callTimeout`); the callee was told to cancel it.
    case deadlineExceeded(target: String, limit: Duration)
    /// The callee's system could not decode the call: an argument, a
    /// generic substitution, or the target.
    case badCall(String)
    /// The call could not be sent, or its actor's system is gone (its
    /// process exited, its host or link died): the port error says which
    /// (`peerDied`, `connectionLost`, `invalidPort`, `timedOut`, …).
    case transport(PortError)

    /// What went wrong.
    public var description: String {
        switch self {
        case let .actorNotFound(id): "no \(id): it resigned, or never existed in its system"
        case let .remoteError(type, description): "the callee threw \(type): \(description)"
        case let .deadlineExceeded(target, limit): "\(target) did not finish within \(limit); the callee was told to cancel it"
        case let .badCall(reason): "the callee's system could not decode the call: \(reason)"
        case let .transport(error): "the call could not reach its actor: \(error)"
        }
    }
}
