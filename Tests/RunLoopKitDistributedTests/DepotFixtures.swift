// What the distributed-actor tests call: a `Depot` actor and its log,
// the values its calls carry, and two systems in one process
// (PortActorSystemTests, ActorCallTapTests).
import Distributed
import Glibc
import RunLoopKit
import RunLoopKitDistributed
@_spi(RunLoopKitInternals) import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

struct Parcel: Codable, Sendable, Equatable {
    var label: String
    var weights: [Double]
    var returnTo: Port
    var copies: [String: [Port]]
}

enum Refusal: Error, Codable, Equatable {
    case tooHeavy(Double)
    case closed
}

struct NotCodableError: Error, CustomStringConvertible {
    var description: String { "the depot is on fire" }
}

/// What a `Depot` saw of its calls: their order, and those cancelled.
final class DepotLog: Sendable {
    let calls = Locked<[Int]>([])
    let cancelled = Locked(0)
    let started = Locked(0)
    /// Calls that finished cleaning up after their cancellation.
    let cleanedUp = Locked(0)
}

distributed actor Depot {
    typealias ActorSystem = PortActorSystem

    let log: DepotLog

    init(worker: LoopThread, log: DepotLog, actorSystem: PortActorSystem) {
        self.log = log
        self.actorSystem = actorSystem
        actorSystem.pin(id, to: worker)
    }

    nonisolated var unownedExecutor: UnownedSerialExecutor { actorSystem.executor(for: id) }

    /// The name of the LoopThread the call runs on.
    distributed func threadName() -> String { LoopThread.currentName ?? "not a LoopThread" }

    distributed func weigh(_ parcel: Parcel) throws -> Parcel {
        if let heavy = parcel.weights.first(where: { $0 > 100 }) { throw Refusal.tooHeavy(heavy) }
        if parcel.label == "fire" { throw NotCodableError() }
        var weighed = parcel
        weighed.label += " (weighed)"
        return weighed
    }

    distributed func echo<T: Codable & Sendable>(_ value: T) -> T { value }

    distributed func record(_ number: Int) { log.calls.withLock { $0.append(number) } }

    distributed func add(_ a: Int, _ b: Int) -> Int { a + b }

    /// Kills this process in the middle of the call.
    distributed func crash() {
        kill(getpid(), SIGKILL)
    }

    /// Waits until cancelled (or an hour): counts its start and its cancellation.
    distributed func wait() async throws {
        log.started.withLock { $0 += 1 }
        do {
            try await Task.sleep(for: .seconds(3_600))
        } catch {
            log.cancelled.withLock { $0 += 1 }
            throw error
        }
    }
}

extension Depot {
    /// Waits until cancelled, then cleans up for a while before it ends,
    /// as a call may: its task returns to the system's thread only then.
    distributed func cleanUpSlowlyWhenCancelled() async throws {
        log.started.withLock { $0 += 1 }
        do {
            try await Task.sleep(for: .seconds(3_600))
        } catch {
            usleep(100_000)  // the clean-up's work, not a wait for anything
            log.cleanedUp.withLock { $0 += 1 }
            throw error
        }
    }
}

/// Two systems in one process: `home` hosts the depot, `away` calls it
/// through its ports, as another process would.
final class TwoSystems: Sendable {
    let home: PortActorSystem
    let away: PortActorSystem
    let worker = LoopThread(name: "depot-worker")
    let log = DepotLog()
    let depot: Depot
    let remote: Depot

    init(transport: Port.Transport = .inproc) throws {
        home = try PortActorSystem(transport: transport, name: "actors-home")
        away = try PortActorSystem(transport: transport, name: "actors-away")
        try worker.start()
        depot = Depot(worker: worker, log: log, actorSystem: home)
        remote = try Depot.resolve(id: depot.id, using: away)
    }

    func close() {
        away.shutdown()
        home.shutdown()
        worker.stop()
    }
}
