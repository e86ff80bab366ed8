import Glibc
import RunLoopKit
import Synchronization

/// What every part of a child process shares: who it is, where the
/// coordinator is, its accounts, and the ports of this and other processes
/// it may send to.
final class ChildContext: Sendable {
    /// The mode a handler runs its loop in when asked for a nested run.
    static let nestedMode = RunLoop.Mode("soak.nested")

    let options: ChildOptions
    var incarnation: UInt32 { options.incarnation }
    var coordinatorPID: Int32 { options.coordinatorPID }
    let coordinator: Port
    let counters = ChildCounters()
    let violations: ViolationLog
    let localEndpoints = LocalEndpoints()
    let remotePorts: RemotePorts
    let drain = DrainWaiter()
    private let deadIncarnations = Mutex(Set<UInt32>())
    private let serials = Atomic<UInt32>(0)

    init(options: ChildOptions, coordinator: Port) {
        self.options = options
        self.coordinator = coordinator
        violations = ViolationLog(prefix: "rlk-soak child \(options.incarnation) (pid \(getpid()))")
        remotePorts = RemotePorts(ownIncarnation: options.incarnation)
    }

    /// A serial number for a new worker or port of this process.
    func nextSerial() -> UInt32 { serials.add(1, ordering: .relaxed).newValue }

    @Sendable func isDead(_ incarnation: UInt32) -> Bool { deadIncarnations.withLock { $0.contains(incarnation) } }

    /// Takes in the coordinator's list of killed incarnations; returns the
    /// ones not known before.
    func learnDead(_ incarnations: [UInt32]) -> Set<UInt32> {
        deadIncarnations.withLock { known in
            let fresh = Set(incarnations).subtracting(known)
            known.formUnion(fresh)
            return fresh
        }
    }

    /// Tells the coordinator which named ports appeared and went, so that
    /// its directory lists the living ones.
    func announce(added: [DirectoryEntry] = [], removed: [UInt64] = []) {
        guard !added.isEmpty || !removed.isEmpty else { return }
        send(.endpointsChanged(incarnation: incarnation, added: added, removed: removed))
    }

    func send(_ message: ControlMessage) {
        do {
            try message.send(to: coordinator)
        } catch {
            Console.warn("rlk-soak child \(incarnation): cannot reach the coordinator: \(error)")
        }
    }
}
