import Distributed
import FoundationEssentials
@_spi(RunLoopKitInternals) import RunLoopKitCore
import RunLoopKitPorts

/// The system's ports' side, on its own thread: replies to the calls it
/// made, and the calls it serves, each in a task of its own until it ends
/// (`shutdown()` waits for those).
extension PortActorSystem {
    /// A call served here: its caller's reply port and its id there.
    struct ServedCall: Hashable {
        let caller: Port?
        let id: UInt64
    }

    /// A served call's task, or its cancellation if that came first.
    final class ServingTask: @unchecked Sendable {
        private let state = Locked<(task: Task<Void, Never>?, cancelled: Bool)>((nil, false))
        /// The call, for the tap's view of its cancellation.
        let actor: UInt64
        let target: String

        init(actor: UInt64, target: String) {
            self.actor = actor
            self.target = target
        }

        func start(_ task: Task<Void, Never>) {
            let cancelled = state.withLock { state in
                state.task = task
                return state.cancelled
            }
            if cancelled { task.cancel() }
        }

        func cancel() {
            let task = state.withLock { state in
                state.cancelled = true
                return state.task
            }
            task?.cancel()
        }
    }

    func receiveReply(_ message: PortMessage) {
        var delivery = DeferredTapDelivery(of: message, on: replyPort)
        defer { delivery.record(as: nil) }
        guard let (tree, _) = try? ActorCallMessage.read(message, as: ActorCallMessage.replyType),
              let (id, outcome) = try? ActorCallMessage.reply(from: tree)
        else { return }
        // A call given up on (cancelled, past its deadline) is no longer pending: its late reply is dropped.
        let pending = state.withLock { $0.pending[id] }
        if delivery.isPending {
            delivery.record(as: ActorCallTap.reply(id: id, actor: pending?.actor ?? 0, target: pending?.target, outcome: outcome))
        }
        pending?.outcome.finish(.success(message))
    }

    func receiveCall(_ message: PortMessage) {
        var delivery = DeferredTapDelivery(of: message, on: callPort)
        defer { delivery.record(as: nil) }
        if message.msgid == ActorCallMessage.nameMsgid {
            answerNameQuery(message)
            return
        }
        if message.msgid == ActorCallMessage.cancelMsgid {
            guard let (tree, _) = try? ActorCallMessage.read(message, as: ActorCallMessage.cancelType),
                  let id = try? ActorCallMessage.cancelled(from: tree) else { return }
            let serving = state.withLock { $0.serving[ServedCall(caller: message.replyPort, id: id)] }
            if delivery.isPending { delivery.record(as: ActorCallTap.call(.cancellation, id: id, actor: serving?.actor ?? 0, target: serving?.target)) }
            serving?.cancel()
            return
        }
        let call: ActorCallMessage.Call
        let ports: [Port]
        do {
            let (tree, read) = try ActorCallMessage.read(message, as: ActorCallMessage.callType)
            call = try ActorCallMessage.call(from: tree)
            ports = read
        } catch {
            return
        }
        if delivery.isPending { delivery.record(as: ActorCallTap.call(.call, id: call.id, actor: call.actor, target: call.target)) }
        guard let actor = state.withLock({ $0.actors[call.actor]?.actor }) else {
            reply(call.id, .actorNotFound, ports: [], to: message.replyPort, actor: call.actor, target: call.target)
            return
        }
        let key = ServedCall(caller: message.replyPort, id: call.id)
        let serving = ServingTask(actor: call.actor, target: call.target)
        state.withLock { $0.serving[key] = serving }
        let handler = PortResultHandler(system: self, callID: call.id, actor: call.actor, target: call.target, replyPort: message.replyPort)
        // On the system's own thread, not the global pool: a call is served
        // even while every thread of the pool is blocked.
        serving.start(Task(executorPreference: thread) { [self] in
            var decoder = PortInvocationDecoder(call: call, ports: ports, system: self)
            do {
                try await executeDistributedTarget(on: actor, target: RemoteCallTarget(call.target), invocationDecoder: &decoder, handler: handler)
            } catch {
                reply(call.id, PortResultHandler.outcome(of: error), to: message.replyPort, actor: call.actor, target: call.target)
            }
            servedCallEnded(key)
        })
    }

    /// A call served here has ended: the last one to end after a shutdown
    /// tells it (or stops the thread itself, if the shutdown did not wait).
    private func servedCallEnded(_ key: ServedCall) {
        let (ended, stop) = state.withLock { state -> (Completion<Void>?, Bool) in
            state.serving.removeValue(forKey: key)
            guard state.serving.isEmpty, state.isShutDown else { return (nil, false) }
            defer { state.stopWhenServed = false }
            return (state.servedCallsEnded, state.stopWhenServed)
        }
        ended?.fill(.success(()))
        if stop { thread.stop() }
    }

    /// Sends a call's outcome to its caller; the actor and the target are
    /// the tap's.
    func reply(
        _ callID: UInt64, _ outcome: ActorCallMessage.Outcome, ports: [Port], to replyPort: Port?, actor: UInt64, target: String
    ) {
        TapActorCall.noting(ActorCallTap.reply(id: callID, actor: actor, target: target, outcome: outcome)) {
            try? replyPort?.send(
                msgid: ActorCallMessage.replyMsgid, components: ActorCallMessage.components(reply: callID, outcome, ports: ports),
                before: Date(timeIntervalSinceNow: 10))
        }
    }

    func reply(_ callID: UInt64, _ outcome: (ActorCallMessage.Outcome, [Port]), to replyPort: Port?, actor: UInt64, target: String) {
        reply(callID, outcome.0, ports: outcome.1, to: replyPort, actor: actor, target: target)
    }
}
