import Glibc
import RunLoopKit
import RunLoopKitDistributed
import Synchronization

/// RunLoopKit's distributed call: `PortEchoActor.echo(_:)` (an Int in, an
/// Int out) called through a `PortActorSystem` of the caller's own, so that
/// every call is a typed message to the callee's system and a reply back.
/// The callee is in this process (`otherThread`: a second system, inproc,
/// its actor pinned to a LoopThread) or in a child process of rlk-bench
/// (`childProcess`: the dist-peer child's system over ipc, its actor found
/// by name with `lookup(_:as:timeout:)`). The caller is a task preferring a
/// LoopThread (TimedCalls). One sample per call, in µs.
///
/// Placed as the other rows: the caller's thread and its system's thread
/// (where replies arrive) on `first`; the callee's system, its actor's
/// thread, or the whole child process, on `second`.
final class DistributedCallRoundTrip: Contender {
    enum Callee { case otherThread, childProcess }

    let label: String
    private let callee: Callee
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private let recorder: SampleRecorder
    private var caller: LoopThread?
    private var callerSystem: PortActorSystem?
    private var calleeSystem: PortActorSystem?
    private var worker: LoopThread?
    /// The callee's actor itself (otherThread): the system holds it weakly.
    private var actor: PortEchoActor?
    /// The caller's reference: a proxy through `callerSystem`.
    private var remote: PortEchoActor?
    private var child: ChildProcess?

    init(_ callee: Callee, iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.callee = callee
        label = switch callee {
        case .otherThread: "RunLoopKit PortActorSystem (inproc, another LoopThread)"
        case .childProcess: "RunLoopKit PortActorSystem (ipc, a child process)"
        }
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.placement = placement
        recorder = SampleRecorder(capacity: iterations)
    }

    func setUp() throws {
        caller = try Placement.startedLoopThread("bench-caller", on: placement.first)
        let transport: Port.Transport = callee == .otherThread ? .inproc : .ipc
        let callerSystem = try PortActorSystem(transport: transport, name: "bench-dist-away")
        self.callerSystem = callerSystem
        Placement.pinThreads(named: "bench-dist-away", to: placement.first)
        switch callee {
        case .otherThread:
            let calleeSystem = try PortActorSystem(transport: .inproc, name: "bench-dist-home")
            self.calleeSystem = calleeSystem
            Placement.pinThreads(named: "bench-dist-home", to: placement.second)
            let worker = try Placement.startedLoopThread("bench-dist-actor", on: placement.second)
            self.worker = worker
            let actor = PortEchoActor(worker: worker, tally: EchoTally(), actorSystem: calleeSystem)
            self.actor = actor
            remote = try PortEchoActor.resolve(id: actor.id, using: callerSystem)
        case .childProcess:
            let name = "rlk-bench-\(getpid())-dist-\(Self.nextSerial())"
            let child = try ChildProcess(role: "dist-peer", cpu: placement.second, arguments: [name])
            self.child = child
            remote = try awaitBlocking(seconds: 20, what: "the dist-peer child's actor, by name") {
                try await callerSystem.lookup(name, as: PortEchoActor.self, timeout: .seconds(15))
            }
        }
    }

    private static let serials = Mutex(0)

    private static func nextSerial() -> Int {
        serials.withLock { serial in
            serial += 1
            return serial
        }
    }

    func measure() throws -> [Double] {
        guard let caller, let remote else { throw BenchError("not set up") }
        return try TimedCalls.measure(on: caller, recorder: recorder, warmup: warmup, samples: iterations, timeout: timeout) { value in
            try await remote.echo(value)
        }
    }

    func tearDown() {
        if let child, let remote {
            // Asks the child to end; its reply may not come (the child's
            // system may shut down first), which the call's failure shows at
            // once: the caller's system watches the child's port.
            _ = try? awaitBlocking(seconds: 5, what: "the dist-peer child's finish") {
                try? await PortActorSystem.$callTimeout.withValue(.seconds(3)) { try await remote.finish() }
            }
            child.finish(within: 3)
        }
        child = nil
        remote = nil
        actor = nil
        callerSystem?.shutdown()
        calleeSystem?.shutdown()
        callerSystem = nil
        calleeSystem = nil
        worker?.stop()
        caller?.stop()
        worker = nil
        caller = nil
    }
}
