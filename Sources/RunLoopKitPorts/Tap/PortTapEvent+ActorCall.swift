extension PortTapEvent {
    /// A distributed actor's message (`RunLoopKitDistributed`): a call, its
    /// reply or a caller's cancellation, with the call's id, the actor's
    /// number and the method's name (tap format 3, docs/tap-format.md,
    /// "Actor calls"). A recording writes it as `actor_call`.
    public struct ActorCall: Codable, Sendable, Hashable {
        /// What the message is to the call.
        public enum Role: String, Codable, Sendable, CaseIterable {
            /// The caller's call, to the actor's system.
            case call
            /// The callee's answer, to the caller's reply port.
            case reply
            /// The caller gave up (its task was cancelled, or its deadline passed).
            case cancellation

            init?(wireValue: UInt8) {
                switch wireValue {
                case 1: self = .call
                case 2: self = .reply
                case 3: self = .cancellation
                default: return nil
                }
            }
        }

        /// How a call ended, as its reply says.
        public enum Outcome: String, Codable, Sendable, CaseIterable {
            /// Not a reply.
            case none
            /// The method returned a value.
            case value
            /// The method returned nothing.
            case void
            /// It threw an error of a `Codable` type, which crosses as itself.
            case typedError
            /// It threw an error that crosses as a description.
            case remoteError
            /// No actor of that number lives in the callee's system.
            case actorNotFound
            /// The callee could not read the call.
            case badCall

            init?(wireValue: UInt8) {
                guard Int(wireValue) < Self.allCases.count else { return nil }
                self = Self.allCases[Int(wireValue)]
            }
        }

        /// What the message is.
        public var role: Role
        /// The call's number in its caller's system: a call, its reply and
        /// its cancellation share it.
        public var id: UInt64
        /// The actor's number in its system (its call port names the system).
        public var actor: UInt64
        /// The method, as Swift names it (`Greeter.greet(name:)`), when the
        /// process that recorded the message knew it.
        public var method: String?
        /// A reply's outcome; `none` for a call or a cancellation.
        public var outcome: Outcome

        /// An actor call's description with every field given.
        public init(role: Role, id: UInt64, actor: UInt64, method: String?, outcome: Outcome = .none) {
            self.role = role
            self.id = id
            self.actor = actor
            self.method = method
            self.outcome = outcome
        }
    }
}
