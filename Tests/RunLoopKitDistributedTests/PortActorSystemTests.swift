// Distributed actors over ports (issue 43, must 2): calls through a
// PortActorSystem within a process (two systems, the call crossing their
// ports) and from another process, with Codable values, ports, generics,
// errors, cancellation, deadlines, resigned actors and many calls in flight.
import Distributed
import Glibc
import RunLoopKit
import RunLoopKitDistributed
@_spi(RunLoopKitInternals) import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Distributed actors over ports (issue 43)", .blocksThreads)
struct PortActorSystemTests {
    @Test("a call through another system's ports runs on the actor's named LoopThread, as a local call does")
    func pinnedToItsThread() async throws {
        let systems = try TwoSystems()
        defer { systems.close() }
        #expect(__isRemoteActor(systems.remote) && !__isRemoteActor(systems.depot))
        #expect(try await systems.remote.threadName() == "depot-worker")
        #expect(try await systems.depot.threadName() == "depot-worker")
    }

    @Test("arguments and results of several Codable types cross, ports and nested ports inside them coming back as the same objects; a generic distributed function works")
    func valuesAndPorts() async throws {
        let systems = try TwoSystems()
        defer { systems.close() }
        let (a, b) = (try Port(transport: .inproc), try Port(transport: .inproc))
        defer { a.invalidate(); b.invalidate() }
        let parcel = Parcel(label: "box", weights: [1.5, 2], returnTo: a, copies: ["x": [a, b]])
        let weighed = try await systems.remote.weigh(parcel)
        #expect(weighed.label == "box (weighed)" && weighed.weights == [1.5, 2])
        #expect(weighed.returnTo === a && weighed.copies["x"]?[0] === a && weighed.copies["x"]?[1] === b)
        #expect(try await systems.remote.echo([1, 2, 3]) == [1, 2, 3])
        #expect(try await systems.remote.echo("text") == "text")
        #expect(try await systems.remote.echo(parcel) == parcel)
        #expect(try await systems.remote.add(40, 2) == 42)
    }

    @Test("a callee's error crosses as itself when it is Codable and the caller's system allows its type; otherwise (not allowed, or not Codable) as a described remote error")
    func errors() async throws {
        let systems = try TwoSystems()
        defer { systems.close() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let heavy = Parcel(label: "box", weights: [500], returnTo: port, copies: [:])
        await #expect {
            try await systems.remote.weigh(heavy)
        } throws: { error in
            guard case let .remoteError(type, description)? = error as? PortActorSystemError else { return false }
            return type.hasSuffix("Refusal") && description.contains("tooHeavy")
        }
        systems.away.allowErrorType(Refusal.self)
        await #expect(throws: Refusal.tooHeavy(500)) { try await systems.remote.weigh(heavy) }
        var fire = heavy
        (fire.label, fire.weights) = ("fire", [])
        await #expect {
            try await systems.remote.weigh(fire)
        } throws: { error in
            guard case let .remoteError(_, description)? = error as? PortActorSystemError else { return false }
            return description == "the depot is on fire"
        }
    }

    @Test("cancelling the caller's task ends its call with CancellationError at once and cancels the callee's task")
    func cancellation() async throws {
        let systems = try TwoSystems()
        let driver = LoopThread(name: "cancel-driver")
        try driver.start()
        defer {
            systems.close()
            driver.stop()
        }
        // The call, the wait for it to start and the cancellation all run on
        // a LoopThread: other suites' exit tests hold the cooperative pool
        // for a minute at times, and a cancellation decided there would come
        // after any deadline. The call's deadline is far (a safety net: a
        // cancellation that did not work fails the test then, not hangs it).
        let (started, outcome) = await Task(executorPreference: driver) { () async -> (Bool, (any Error)?) in
            let call = Task(executorPreference: driver) {
                try await PortActorSystem.$callTimeout.withValue(.seconds(120)) { try await systems.remote.wait() }
            }
            let deadline = ContinuousClock.now + .seconds(60)
            while systems.log.started.withLock({ $0 }) == 0, ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
            let started = systems.log.started.withLock { $0 } == 1
            call.cancel()
            do {
                try await call.value
                return (started, nil)
            } catch {
                return (started, error)
            }
        }.value
        #expect(started, "the callee never started the call")
        #expect(outcome is CancellationError, "the call ended with \(String(describing: outcome))")
        #expect(await waitFor { systems.log.cancelled.withLock { $0 } == 1 }, "the callee's task was not cancelled")
    }

    @Test("a call past its deadline (set by the caller) fails with deadlineExceeded near it, and the callee's task is cancelled")
    func deadline() async throws {
        let systems = try TwoSystems()
        let driver = LoopThread(name: "deadline-driver")
        try driver.start()
        defer {
            systems.close()
            driver.stop()
        }
        // The caller runs on a LoopThread, so that it resumes when its call
        // ends, not when the cooperative pool is free again (exit tests of
        // other suites hold it while their children run).
        let (error, elapsed) = await Task(executorPreference: driver) { () async -> ((any Error)?, Duration) in
            let start = ContinuousClock.now
            do {
                try await PortActorSystem.$callTimeout.withValue(.milliseconds(300)) { try await systems.remote.wait() }
                return (nil, ContinuousClock.now - start)
            } catch {
                return (error, ContinuousClock.now - start)
            }
        }.value
        guard case .deadlineExceeded? = error as? PortActorSystemError else {
            Issue.record("the call ended with \(String(describing: error))")
            return
        }
        #expect(elapsed >= .milliseconds(300) && elapsed < .seconds(10), "\(elapsed)")
        #expect(await waitFor { systems.log.cancelled.withLock { $0 } == 1 }, "the callee's task was not cancelled")
    }

    @Test("shutdown cancels the calls it serves and returns once they have ended: a callee still cleaning up after its cancellation finishes first, and its task returns to a system thread that still runs")
    func shutdownWaitsForTheCallsItServes() async throws {
        let systems = try TwoSystems()
        let driver = LoopThread(name: "shutdown-driver")
        try driver.start()
        defer {
            systems.close()
            driver.stop()
        }
        let call = Task(executorPreference: driver) { try await systems.remote.cleanUpSlowlyWhenCancelled() }
        #expect(await waitFor { systems.log.started.withLock { $0 } == 1 })
        systems.home.shutdown()
        #expect(systems.log.cleanedUp.withLock { $0 } == 1, "shutdown returned before the call it served had ended")
        // The caller's call fails: the system that served it is gone.
        await #expect(throws: (any Error).self) { try await call.value }
    }

    @Test("an ID whose actor resigned: a remote call fails with actorNotFound, and its own system cannot resolve it")
    func resigned() async throws {
        let systems = try TwoSystems()
        defer { systems.close() }
        let worker = LoopThread(name: "short-lived")
        try worker.start()
        defer { worker.stop() }
        var short: Depot? = Depot(worker: worker, log: DepotLog(), actorSystem: systems.home)
        let id = short!.id
        short = nil  // its deinit resigns the ID
        let remote = try Depot.resolve(id: id, using: systems.away)
        await #expect {
            try await remote.add(1, 1)
        } throws: { error in
            guard case .actorNotFound? = error as? PortActorSystemError else { return false }
            return true
        }
        #expect(throws: PortActorSystemError.self) { try Depot.resolve(id: id, using: systems.home) }
    }

    @Test("10,000 calls in flight on one actor from one process share one reply port: none lost, and calls made one after another from one task arrive in that order")
    func manyCallsInFlight() async throws {
        let systems = try TwoSystems(transport: .ipc)
        defer { systems.close() }
        let remote = systems.remote
        let sum = try await withThrowingTaskGroup(of: Int.self) { group in
            for index in 0..<10_000 { group.addTask { try await remote.add(index, 1) } }
            return try await group.reduce(0, +)
        }
        #expect(sum == (0..<10_000).reduce(0) { $0 + $1 + 1 })
        for number in 0..<500 { try await remote.record(number) }
        #expect(systems.log.calls.withLock { $0 } == Array(0..<500))
    }

    @Test("from another process: a child looks the system's port up by name and calls the depot, a port of its own inside the parcel")
    func fromAnotherProcess() async throws {
        let home = try PortActorSystem(transport: .ipc, name: "actors-home-ipc")
        let worker = LoopThread(name: "depot-ipc")
        try worker.start()
        let depot = Depot(worker: worker, log: DepotLog(), actorSystem: home)
        let name = "depot-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try PortNameServer.register(home.callPort, name: name)
        defer {
            PortNameServer.unregister(name)
            home.shutdown()
            worker.stop()
        }
        let number = depot.id.number
        await #expect(processExitsWith: .success) { [name = name as String, number = number as UInt64] in
            let away = try PortActorSystem(transport: .ipc, name: "actors-away-ipc")
            let port = try PortNameServer.lookup(name, timeout: .seconds(30))
            let remote = try Depot.resolve(id: PortActorID(system: port, number: number), using: away)
            let mine = try Port(transport: .ipc)
            let parcel = Parcel(label: "far", weights: [3], returnTo: mine, copies: [:])
            let weighed = try await remote.weigh(parcel)
            guard weighed.label == "far (weighed)", weighed.returnTo === mine, try await remote.add(2, 3) == 5 else { exit(1) }
            guard try await remote.threadName() == "depot-ipc" else { exit(2) }
            mine.invalidate()
            away.shutdown()
        }
    }
}

extension PortActorSystemTests {
    @Test("a callee SIGKILLed mid-call: the caller's call fails with .transport (its system's process died) within the ports' bound, and its later calls fail at once")
    func calleeKilledMidCall() async throws {
        let name = "depot-kill-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let caller = try PortActorSystem(transport: .ipc, name: "actors-caller")
        let driver = LoopThread(name: "kill-driver")
        try driver.start()
        defer {
            caller.shutdown()
            driver.stop()
        }
        // The caller's side runs on a LoopThread: while the child lives,
        // the test awaits it on the cooperative pool's threads.
        let outcome = Task(executorPreference: driver) { () async -> (first: String, elapsed: Duration, second: String) in
            do {
                let port = try PortNameServer.lookup(name, timeout: .seconds(60))
                let remote = try Depot.resolve(id: PortActorID(system: port, number: 1), using: caller)
                _ = try await remote.add(1, 1)
                let start = ContinuousClock.now
                let first: String
                do {
                    try await remote.crash()
                    first = "answered"
                } catch {
                    first = "\(error)"
                }
                let elapsed = ContinuousClock.now - start
                do {
                    _ = try await remote.add(1, 1)
                    return (first, elapsed, "answered")
                } catch {
                    return (first, elapsed, "\(error)")
                }
            } catch {
                return ("set-up failed: \(error)", .zero, "")
            }
        }
        await #expect(processExitsWith: .signal(SIGKILL)) { [name = name as String] in
            alarm(120)  // a child the caller never reaches ends (by SIGALRM, failing the test) instead of hanging it
            let home = try PortActorSystem(transport: .ipc, name: "actors-doomed")
            let worker = LoopThread(name: "doomed-worker")
            try worker.start()
            let depot = Depot(worker: worker, log: DepotLog(), actorSystem: home)
            guard depot.id.number == 1 else { exit(3) }
            try PortNameServer.register(home.callPort, name: name)
            while true { sleep(60) }
        }
        let (first, elapsed, second) = await outcome.value
        #expect(first.contains("process") && first.contains("exited"), "\(first)")
        #expect(elapsed < .seconds(10), "\(elapsed)")
        #expect(second != "answered", "\(second)")
        PortNameServer.unregister(name)
    }
}

/// Polls `condition` every 10 ms for up to `seconds` (a safety net).
func waitFor(seconds: Double = 30, _ condition: @Sendable () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

/// An actor that says which process generation it is, and can end its process.
distributed actor Named {
    typealias ActorSystem = PortActorSystem

    let generation: Int

    init(generation: Int, actorSystem: PortActorSystem) {
        self.generation = generation
        self.actorSystem = actorSystem
    }

    distributed func whichGeneration() -> Int { generation }

    /// Ends this process a moment after replying, its system shut down
    /// first (so that no message's bytes are alive at exit, which
    /// LeakSanitizer would report).
    distributed func finish() {
        let system = actorSystem
        Task.detached {
            try? await Task.sleep(for: .milliseconds(200))
            system.shutdown()
            exit(0)
        }
    }
}

extension PortActorSystemTests {
    @Test("an actor registered under a name is found by name and called; its process restarted under the same name is found again, and the old actor's reference fails")
    func namedActorFoundAgainAfterRestart() async throws {
        let name = "named-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let caller = try PortActorSystem(transport: .ipc, name: "actors-name-caller")
        let driver = LoopThread(name: "name-driver")
        try driver.start()
        defer {
            caller.shutdown()
            driver.stop()
        }
        // Finds each generation in turn as it registers, then asks it to end
        // its process; runs on a LoopThread while the children hold the pool.
        let outcome = Task(executorPreference: driver) { () async -> (generations: [Int], oldCallFailed: Bool) in
            var generations: [Int] = []
            var first: Named?
            let deadline = ContinuousClock.now + .seconds(120)
            while generations.count < 2, ContinuousClock.now < deadline {
                guard let named = try? await caller.lookup(name, as: Named.self, timeout: .seconds(1)),
                      let generation = try? await named.whichGeneration(), !generations.contains(generation)
                else {
                    try? await Task.sleep(for: .milliseconds(50))
                    continue
                }
                generations.append(generation)
                if first == nil { first = named }
                try? await named.finish()
            }
            let oldCallFailed = (try? await first?.whichGeneration()) == nil
            return (generations, oldCallFailed)
        }
        for generation in 1...2 {
            await #expect(processExitsWith: .success) { [name = name as String, generation = generation as Int] in
                alarm(120)  // a child nobody finishes ends (by SIGALRM, failing the test) instead of hanging it
                let home = try PortActorSystem(transport: .ipc, name: "actors-named")
                let named = Named(generation: generation, actorSystem: home)
                // The previous generation may still be exiting: its name is
                // free once its process is gone.
                while true {
                    do {
                        try home.register(named, name: name)
                        break
                    } catch {
                        usleep(20_000)
                    }
                }
                while true { sleep(1) }
            }
        }
        let (generations, oldCallFailed) = await outcome.value
        #expect(generations == [1, 2])
        #expect(oldCallFailed, "a reference to the first generation's actor still answered")
    }
}

extension PortActorSystemTests {
    @Test("shutdown unregisters the names the system's actors were registered under: a lookup then says .nameNotFound")
    func shutdownUnregistersNames() throws {
        let system = try PortActorSystem(transport: .ipc, name: "actors-names-down")
        let named = Named(generation: 1, actorSystem: system)
        let name = "named-down-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try system.register(named, name: name)
        #expect(throws: Never.self) { try PortNameServer.lookup(name) }
        system.shutdown()
        #expect(throws: PortError.nameNotFound(name)) { try PortNameServer.lookup(name) }
        withExtendedLifetime(named) {}
    }
}
