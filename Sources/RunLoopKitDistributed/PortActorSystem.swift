public import Distributed
import FoundationEssentials
@_spi(RunLoopKitInternals) import RunLoopKitCore
public import RunLoopKitPorts

/// A `DistributedActorSystem` whose transport is RunLoopKit's ports
/// (docs/distributed-actors.md). An actor's identity is its system's call
/// port and a number (`PortActorID`); a call is a typed message to that
/// port with the caller's system's reply port, matched to its reply by a
/// call id, so that any number of calls in flight share one reply port.
///
/// ```swift
/// distributed actor Counter {
///     typealias ActorSystem = PortActorSystem
///     var total = 0
///     init(worker: LoopThread, actorSystem: PortActorSystem) {
///         self.actorSystem = actorSystem
///         actorSystem.pin(id, to: worker)
///     }
///     // Its calls, local and remote, run on its named thread.
///     nonisolated var unownedExecutor: UnownedSerialExecutor { actorSystem.executor(for: id) }
///     distributed func add(_ amount: Int) -> Int { total += amount; return total }
/// }
/// ```
///
/// Calls honour the caller's task cancellation (the callee's task is
/// cancelled too) and a deadline (`PortActorSystem.callTimeout`, 30 s
/// unless the caller sets it with `$callTimeout.withValue`). A callee's
/// error crosses as itself when its type is `Codable` and the caller's
/// system allows it (`allowErrorType`), as
/// `PortActorSystemError.remoteError` otherwise. When the callee's system
/// goes (its process exits, its host or link dies, `shutdown()`), calls
/// waiting on it fail within the bounds its ports promise.
public final class PortActorSystem: DistributedActorSystem, @unchecked Sendable {
    /// An actor's identity: its system's call port and its number.
    public typealias ActorID = PortActorID
    /// Records a call's arguments as typed payload trees.
    public typealias InvocationEncoder = PortInvocationEncoder
    /// Reads a call's arguments back.
    public typealias InvocationDecoder = PortInvocationDecoder
    /// Sends a served call's outcome back.
    public typealias ResultHandler = PortResultHandler
    /// Arguments, results and errors that cross are `Codable`.
    public typealias SerializationRequirement = Codable

    /// How long a call waits for its reply: 30 s, unless the calling task
    /// sets it (`PortActorSystem.$callTimeout.withValue(.seconds(2)) { … }`).
    @TaskLocal public static var callTimeout: Duration = .seconds(30)

    /// The port this system receives calls on: every local actor's ID names it.
    public let callPort: Port
    /// Where the replies to this process's calls arrive, all calls sharing it.
    let replyPort: Port
    /// The thread both ports receive on.
    let thread: LoopThread

    /// Its handlers hold it weakly: the anchor keeps its side table where
    /// LeakSanitizer sees it (`SideTableAnchor`).
    private var sideTableAnchor = SideTableAnchor()

    let state = Locked(State())
    struct State {
        var actors: [UInt64: LocalActor] = [:]
        var pinned: [UInt64: LoopThread] = [:]
        var names: [String: UInt64] = [:]
        var nextActor: UInt64 = 1
        var nextCall: UInt64 = 1
        var pending: [UInt64: PendingCall] = [:]
        var serving: [ServedCall: ServingTask] = [:]
        var watched: Set<Port> = []
        var errorTypes: [String: @Sendable (PayloadValue, [Port]) throws -> any Error] = [:]
        var isShutDown = false
        /// Filled when the last call served here has ended, once a shutdown waits for that.
        var servedCallsEnded: Completion<Void>?
        /// Set by a shutdown that could not wait for the calls served here:
        /// the last of them to end stops the thread.
        var stopWhenServed = false
    }

    struct LocalActor {
        weak var actor: (any DistributedActor)?
    }

    struct PendingCall {
        let outcome: AsyncOutcome
        let destination: Port
        /// The actor's number and the target, for the tap's view of its reply.
        let actor: UInt64
        let target: String
    }

    /// A system whose ports use `transport`: `.inproc` for actors of one
    /// process, `.ipc` (the default) across processes, `.tcp(...)` across
    /// hosts. Its ports receive on a LoopThread of its own, `name`.
    public init(transport: Port.Transport = .ipc, name: String = "RunLoopKit.actors") throws {
        thread = LoopThread(name: name)
        try thread.start()
        do {
            callPort = try Port(transport: transport)
            replyPort = try Port(transport: transport)
        } catch {
            thread.stop()
            throw error
        }
        sideTableAnchor.hold(self)
        // The handlers record their deliveries to the tap, as the calls and
        // replies they decode them to.
        TapActorCall.recordDeliveriesInHandler(of: callPort)
        TapActorCall.recordDeliveriesInHandler(of: replyPort)
        callPort.setMessageHandler { [weak self] message in self?.receiveCall(message) }
        replyPort.setMessageHandler { [weak self] message in self?.receiveReply(message) }
        do {
            try callPort.schedule(on: thread)
            try replyPort.schedule(on: thread)
        } catch {
            shutdown()
            throw error
        }
    }

    deinit { shutdown() }

    /// How long `shutdown()` waits for the calls being served here to end
    /// once it has cancelled them.
    public static let servedCallsBound: Double = 1

    /// Stops the system: the names its actors were registered under are
    /// unregistered, its ports are invalidated (callers elsewhere see its
    /// actors' calls fail), calls waiting here fail with
    /// `PortActorSystemError.transport`, calls being served here are
    /// cancelled, and its thread stops once they have ended. A served call
    /// ends on this system's thread (its task returns there to send the
    /// reply, which now goes nowhere), so `shutdown()` waits for them, up to
    /// `servedCallsBound`; a call that ignores its cancellation longer, or
    /// a shutdown from the system's own thread, leaves the thread to stop
    /// when the last call ends.
    public func shutdown() {
        let (pending, names, serving) = state.withLock { state -> ([PendingCall], [String], [ServingTask]) in
            state.isShutDown = true
            defer {
                state.pending = [:]
                state.names = [:]
            }
            if !state.serving.isEmpty && state.servedCallsEnded == nil { state.servedCallsEnded = Completion() }
            return (Array(state.pending.values), Array(state.names.keys), Array(state.serving.values))
        }
        // Before the port goes: a lookup meanwhile finds no name rather
        // than a port that is about to be invalid.
        for name in names { PortNameServer.unregister(name) }
        for call in pending { call.outcome.fail(PortActorSystemError.transport(.invalidPort("the actor system was shut down"))) }
        callPort.invalidate()
        replyPort.invalidate()
        for call in serving { call.cancel() }
        if !serving.isEmpty && thread.threadID != ThreadIdentity.currentTID,
            let ended = state.withLock({ $0.servedCallsEnded }) {
            _ = ended.wait(until: MonotonicClock.now() &+ UInt64(Self.servedCallsBound * 1e9))
        }
        let stopNow = state.withLock { state in
            guard state.serving.isEmpty else {
                state.stopWhenServed = true
                return false
            }
            return true
        }
        if stopNow { thread.stop() }
    }

    /// Lets calls of this process decode an error of type `E` thrown by a
    /// callee as itself; other errors arrive as
    /// `PortActorSystemError.remoteError`. A type is never decoded by its
    /// name alone: only those allowed here.
    public func allowErrorType<E: Error & Codable>(_ type: E.Type) {
        let name = Payload.typeName(of: type)
        state.withLock { state in
            state.errorTypes[name] = { tree, ports in try PayloadDecoder.decode(E.self, from: tree, ports: ports) }
        }
    }

    // MARK: - Identities

    /// A new identity in this system: its call port and the next number.
    public func assignID<Act>(_ actorType: Act.Type) -> PortActorID where Act: DistributedActor, Act.ID == PortActorID {
        let number = state.withLock { state in
            defer { state.nextActor += 1 }
            return state.nextActor
        }
        return PortActorID(system: callPort, number: number)
    }

    /// Makes the actor reachable by calls (the system holds it weakly:
    /// it lives as long as its owners keep it).
    public func actorReady<Act>(_ actor: Act) where Act: DistributedActor, Act.ID == PortActorID {
        state.withLock { $0.actors[actor.id.number] = LocalActor(actor: actor) }
    }

    /// Forgets the actor: calls to its ID from then on fail with
    /// `PortActorSystemError.actorNotFound`.
    public func resignID(_ id: PortActorID) {
        let names = state.withLock { state -> [String] in
            state.actors[id.number] = nil
            state.pinned[id.number] = nil
            let names = state.names.filter { $0.value == id.number }.map(\.key)
            for name in names { state.names[name] = nil }
            return names
        }
        for name in names { PortNameServer.unregister(name) }
    }

    // MARK: - Executors

    /// Pins the actor `id` of this system to `thread`: its calls, local and
    /// remote, run there, one at a time. Call it in the actor's `init`,
    /// once `actorSystem` is set; the actor's `unownedExecutor` returns
    /// `actorSystem.executor(for: id)` (a distributed actor's stored
    /// properties cannot be read outside its isolation, so the system keeps
    /// the thread).
    public func pin(_ id: PortActorID, to thread: LoopThread) {
        state.withLock { $0.pinned[id.number] = thread }
    }

    /// The executor of the actor `id`: the LoopThread it was pinned to, or
    /// this system's own thread.
    public func executor(for id: PortActorID) -> UnownedSerialExecutor {
        (state.withLock { $0.pinned[id.number] } ?? thread).asUnownedSerialExecutor()
    }

    /// The local actor `id` names, nil for a remote one (the runtime then
    /// makes a proxy that calls through `remoteCall`).
    /// - Throws: `PortActorSystemError.actorNotFound` for an ID of this
    ///   system whose actor resigned or is gone.
    public func resolve<Act>(id: PortActorID, as actorType: Act.Type) throws -> Act? where Act: DistributedActor, Act.ID == PortActorID {
        guard id.system == callPort else { return nil }
        guard let actor = state.withLock({ $0.actors[id.number]?.actor }) as? Act else {
            throw PortActorSystemError.actorNotFound(id.description)
        }
        return actor
    }

    /// A new call's recorder.
    public func makeInvocationEncoder() -> PortInvocationEncoder { PortInvocationEncoder() }

    // MARK: - Calling

    /// Sends a call to the actor's system and awaits its value.
    /// - Throws: `CancellationError`; the callee's error (as itself when
    ///   allowed, else `PortActorSystemError.remoteError`); a
    ///   `PortActorSystemError` (`deadlineExceeded`, `actorNotFound`,
    ///   `transport`, `badCall`); `PortError.payload` for a result that does
    ///   not decode.
    public func remoteCall<Act, Err, Res>(
        on actor: Act, target: RemoteCallTarget, invocation: inout PortInvocationEncoder, throwing: Err.Type, returning: Res.Type
    ) async throws -> Res where Act: DistributedActor, Act.ID == PortActorID, Err: Error, Res: Codable {
        let (outcome, ports) = try await call(actor.id, target: target, invocation: invocation)
        guard case let .value(tree) = outcome else {
            throw PortActorSystemError.badCall("\(target.identifier) answered without a value")
        }
        do {
            return try PayloadDecoder.decode(Res.self, from: tree, ports: ports, userInfo: [.actorSystemKey: self])
        } catch {
            throw PortError.payload(error)
        }
    }

    /// Sends a call of a target that returns nothing, and awaits its end.
    /// - Throws: as `remoteCall`.
    public func remoteCallVoid<Act, Err>(
        on actor: Act, target: RemoteCallTarget, invocation: inout PortInvocationEncoder, throwing: Err.Type
    ) async throws where Act: DistributedActor, Act.ID == PortActorID, Err: Error {
        _ = try await call(actor.id, target: target, invocation: invocation)
    }

    /// Sends the call and awaits its reply: its outcome (thrown, if it is
    /// an error) and the reply's ports.
    private func call(
        _ id: PortActorID, target: RemoteCallTarget, invocation: PortInvocationEncoder
    ) async throws -> (ActorCallMessage.Outcome, [Port]) {
        try Task.checkCancellation()
        let timeout = Self.callTimeout
        let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
        let outcome = AsyncOutcome()
        let callID: UInt64? = state.withLock { state in
            guard !state.isShutDown else { return nil }
            defer { state.nextCall += 1 }
            state.pending[state.nextCall] = PendingCall(outcome: outcome, destination: id.system, actor: id.number, target: target.identifier)
            return state.nextCall
        }
        guard let callID else { throw PortActorSystemError.transport(.invalidPort("the actor system was shut down")) }
        watch(id.system)
        let components = ActorCallMessage.components(
            ActorCallMessage.Call(id: callID, actor: id.number, target: target.identifier, generics: invocation.generics,
                                  arguments: invocation.arguments, timeoutNanoseconds: UInt64(seconds * 1e9)),
            ports: invocation.context.ports)
        let identifier = target.identifier
        let reply = try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PortMessage, any Error>) in
                outcome.arm(continuation)
                outcome.onFinish { [self] in _ = state.withLock { $0.pending.removeValue(forKey: callID) } }
                guard !outcome.isFinished else { return }
                let timer = try? thread.runLoop?.perform(afterDelay: seconds) { [self] in
                    guard !outcome.isFinished else { return }
                    outcome.fail(PortActorSystemError.deadlineExceeded(target: identifier, limit: timeout))
                    sendCancel(callID, actor: id.number, target: identifier, to: id.system)
                }
                outcome.onFinish { timer?.invalidate() }
                do throws(PortError) {
                    try TapActorCall.noting(ActorCallTap.call(.call, id: callID, actor: id.number, target: identifier)) { () throws(PortError) in
                        try id.system.send(msgid: ActorCallMessage.callMsgid, components: components, replyPort: replyPort,
                                           before: Date(timeIntervalSinceNow: seconds))
                    }
                } catch {
                    outcome.fail(PortActorSystemError.transport(error))
                }
            }
        } onCancel: {
            // Finished first, so that the callee's answer to the cancellation
            // (its task's CancellationError) can never be taken for the outcome.
            let wasFinished = outcome.isFinished
            outcome.cancel()
            if !wasFinished { sendCancel(callID, actor: id.number, target: identifier, to: id.system) }
        }
        let (tree, ports) = try ActorCallMessage.read(reply, as: ActorCallMessage.replyType)
        let (_, result) = try ActorCallMessage.reply(from: tree)
        switch result {
        case .value, .void: return (result, ports)
        case let .typedError(type, value, description):
            if let decode = state.withLock({ $0.errorTypes[type] }), let error = try? decode(value, ports) { throw error }
            throw PortActorSystemError.remoteError(type: type, description: description)
        case let .remoteError(type, description): throw PortActorSystemError.remoteError(type: type, description: description)
        case .actorNotFound: throw PortActorSystemError.actorNotFound(id.description)
        case let .badCall(reason): throw PortActorSystemError.badCall(reason)
        }
    }

    /// Fails this process's calls to `destination` once it is invalid (its
    /// process exited, its connection broke, it was shut down).
    private func watch(_ destination: Port) {
        guard destination != callPort, state.withLock({ $0.watched.insert(destination).inserted }) else { return }
        _ = destination.addInvalidationHandler { [weak self] port in
            guard let self else { return }
            let calls = state.withLock { state -> [PendingCall] in
                state.watched.remove(port)
                return state.pending.values.filter { $0.destination == port }
            }
            for call in calls { call.outcome.fail(PortActorSystemError.transport(port.invalidError())) }
        }
    }

    private func sendCancel(_ callID: UInt64, actor: UInt64, target: String, to destination: Port) {
        TapActorCall.noting(ActorCallTap.call(.cancellation, id: callID, actor: actor, target: target)) {
            try? destination.send(msgid: ActorCallMessage.cancelMsgid, components: ActorCallMessage.components(cancel: callID),
                                  replyPort: replyPort, before: Date(timeIntervalSinceNow: 1))
        }
    }
}
