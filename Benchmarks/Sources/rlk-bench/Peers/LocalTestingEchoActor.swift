import Distributed
import RunLoopKit
import Synchronization

/// `PortEchoActor` on Swift's `LocalTestingDistributedActorSystem`: the same
/// `echo`, pinned to a LoopThread so that a call from another thread crosses
/// threads as the PortActorSystem's does. That system resolves every ID to
/// the local instance (it has no transport: its `remoteCall` traps), so a
/// call is the distributed thunk and an actor hop, nothing serialized.
distributed actor LocalTestingEchoActor {
    typealias ActorSystem = LocalTestingDistributedActorSystem

    private let tally: EchoTally

    init(worker: LoopThread, tally: EchoTally, actorSystem: LocalTestingDistributedActorSystem) {
        self.tally = tally
        self.actorSystem = actorSystem
        Self.workers.withLock { $0[id] = worker }
    }

    /// The LoopThread of each live actor, by ID: a distributed actor's
    /// `unownedExecutor` cannot read its stored properties (PortActorSystem
    /// keeps the same table for its actors, `pin(_:to:)`).
    private static let workers = Mutex<[LocalTestingActorID: LoopThread]>([:])

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        guard let worker = Self.workers.withLock({ $0[id] }) else {
            preconditionFailure("LocalTestingEchoActor \(id) has no worker (released?)")
        }
        return worker.asUnownedSerialExecutor()
    }

    /// Forgets the actor's thread; call once nothing calls it any more.
    static func unpin(_ id: LocalTestingActorID) {
        _ = workers.withLock { $0.removeValue(forKey: id) }
    }

    distributed func echo(_ value: Int) -> Int {
        tally.count()
        return value
    }
}
