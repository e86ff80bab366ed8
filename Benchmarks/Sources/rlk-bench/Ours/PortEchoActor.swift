import Distributed
import RunLoopKit
import RunLoopKitDistributed

/// The callee of the distributed-call rows on RunLoopKit: a distributed
/// actor of a `PortActorSystem`, pinned to a LoopThread of its own as
/// docs/distributed-actors.md shows, whose `echo` takes and returns a small
/// argument. `LocalTestingEchoActor` is the same actor on Swift's
/// `LocalTestingDistributedActorSystem` (a distributed actor names its
/// system in its type, so the two cannot be one type).
distributed actor PortEchoActor {
    typealias ActorSystem = PortActorSystem

    private let tally: EchoTally

    init(worker: LoopThread, tally: EchoTally, actorSystem: PortActorSystem) {
        self.tally = tally
        self.actorSystem = actorSystem
        actorSystem.pin(id, to: worker)
    }

    // Local and remote calls run on the pinned LoopThread.
    nonisolated var unownedExecutor: UnownedSerialExecutor { actorSystem.executor(for: id) }

    distributed func echo(_ value: Int) -> Int {
        tally.count()
        return value
    }

    /// Ends the process that serves it (the dist-peer child); the caller
    /// does not rely on the reply, which may or may not leave before the
    /// child's system shuts down.
    distributed func finish() { tally.finish() }
}
