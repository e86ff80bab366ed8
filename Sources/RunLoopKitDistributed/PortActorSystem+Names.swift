public import Distributed
import FoundationEssentials
@_spi(RunLoopKitInternals) import RunLoopKitCore
public import RunLoopKitPorts

/// Actors found by name (docs/distributed-actors.md, "Names"): a name is
/// the system's call port registered with `PortNameServer` (so it is
/// found as any port's name is, across hosts too for a tcp system), and
/// the system answers which of its actors holds it. A process restarted
/// under the same name is found again; the old actor's ID stays invalid.
extension PortActorSystem {
    struct NameQuery: Codable, Sendable {
        var name: String
    }

    struct NameAnswer: Codable, Sendable {
        var number: UInt64?
    }

    /// Registers `actor`, of this system, under `name`, until it resigns,
    /// the system shuts down or the process exits.
    /// - Throws: what `PortNameServer.register` throws (`.nameInUse` while
    ///   a live process holds the name); `PortError.notLocal` for an actor
    ///   of another system.
    public func register<Act>(_ actor: Act, name: String) throws where Act: DistributedActor, Act.ActorSystem == PortActorSystem {
        guard actor.id.system == callPort else { throw PortError.notLocal(actor.id.description) }
        try PortNameServer.register(callPort, name: name)
        state.withLock { $0.names[name] = actor.id.number }
    }

    /// The actor registered under `name` by a process of this host (this
    /// user), waiting up to `timeout` for the name to be registered.
    /// - Throws: what `PortNameServer.lookup` throws (`.nameNotFound`,
    ///   `.nameHolderDied`); `PortActorSystemError.actorNotFound` when the
    ///   name's system no longer has the actor.
    public func lookup<Act>(_ name: String, as type: Act.Type, timeout: Duration = .seconds(5)) async throws -> Act
    where Act: DistributedActor, Act.ActorSystem == PortActorSystem {
        try await actor(named: name, through: PortNameServer.lookup(name, timeout: timeout), as: type, timeout: timeout)
    }

    /// The actor registered under `name` by the process listening at the
    /// tcp `endpoint` of another host, whose identity `server` is.
    /// - Throws: as `PortNameServer.lookup(_:at:server:timeout:)`, and
    ///   `PortActorSystemError.actorNotFound`.
    public func lookup<Act>(
        _ name: String, at endpoint: String, server: PortNameServer.ServerIdentity, as type: Act.Type, timeout: Duration = .seconds(5)
    ) async throws -> Act where Act: DistributedActor, Act.ActorSystem == PortActorSystem {
        try await actor(named: name, through: PortNameServer.lookup(name, at: endpoint, server: server, timeout: timeout),
                        as: type, timeout: timeout)
    }

    private func actor<Act>(named name: String, through port: Port, as type: Act.Type, timeout: Duration) async throws -> Act
    where Act: DistributedActor, Act.ActorSystem == PortActorSystem {
        let answer = try await port.request(NameQuery(name: name), msgid: ActorCallMessage.nameMsgid, as: NameAnswer.self, timeout: timeout)
        guard let number = answer.number else { throw PortActorSystemError.actorNotFound("the actor named \(name)") }
        return try Act.resolve(id: PortActorID(system: port, number: number), using: self)
    }

    /// On the system's thread: answers which actor holds a name.
    func answerNameQuery(_ message: PortMessage) {
        guard let query = try? message.payload(as: NameQuery.self) else { return }
        let number = state.withLock { $0.names[query.name] }
        try? message.replyPort?.send(NameAnswer(number: number), msgid: ActorCallMessage.nameMsgid, before: Date(timeIntervalSinceNow: 10))
    }
}
