import Distributed
import RunLoopKit

/// The same distributed call on Swift's `LocalTestingDistributedActorSystem`
/// (module Distributed): `LocalTestingEchoActor.echo(_:)` on a LoopThread
/// on `second`, called from a task preferring a LoopThread on `first`, as
/// RunLoopKit's side calls (TimedCalls). That system has no transport: a
/// call is an actor hop there and back, nothing encoded. One sample per
/// call, in µs.
final class LocalTestingCallRoundTrip: Contender {
    let label = "Swift LocalTestingDistributedActorSystem (another LoopThread)"
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private let recorder: SampleRecorder
    private var caller: LoopThread?
    private var worker: LoopThread?
    private var system: LocalTestingDistributedActorSystem?
    private var actor: LocalTestingEchoActor?

    init(iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.placement = placement
        recorder = SampleRecorder(capacity: iterations)
    }

    func setUp() throws {
        caller = try Placement.startedLoopThread("bench-caller", on: placement.first)
        let worker = try Placement.startedLoopThread("bench-local-actor", on: placement.second)
        self.worker = worker
        let system = LocalTestingDistributedActorSystem()
        self.system = system
        actor = LocalTestingEchoActor(worker: worker, tally: EchoTally(), actorSystem: system)
    }

    func measure() throws -> [Double] {
        guard let caller, let actor else { throw BenchError("not set up") }
        return try TimedCalls.measure(on: caller, recorder: recorder, warmup: warmup, samples: iterations, timeout: timeout) { value in
            try await actor.echo(value)
        }
    }

    func tearDown() {
        if let actor { LocalTestingEchoActor.unpin(actor.id) }
        actor = nil
        system = nil
        worker?.stop()
        caller?.stop()
        worker = nil
        caller = nil
    }
}
