import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A local port's side of S-SRC1-1: the batch a socket event hands its
/// handler, read as `PortMessage`s or in place (`PortMessageView`), on the
/// loop thread.
extension Port {
    /// On the loop thread: one socket event, a batch of messages to the
    /// handler. Each malformed message dropped on the way counts as one.
    /// Says whether any was delivered or dropped, and whether the queue ran
    /// dry: that empty receive re-armed the socket's readiness signal, so
    /// the loop need not look again.
    func deliver(_ batch: CalloutBatch) -> CalloutBatch.Outcome {
        guard let receiver else { return CalloutBatch.Outcome(handled: false, drained: false) }
        var batch = BatchCount(limit: min(batch.limit, batchLimit.load(ordering: .relaxed)), callout: batch)
        while true {
            // The handler's kind says how a message is read; a handler set
            // since (perhaps by a handler) takes the very next message.
            let (handler, version) = currentHandler()
            // Each handler is passed as a plain (non-escaping) closure: an
            // optional one would be copied, retained and released, every message.
            let outcome = switch handler {
            case let .inPlace(body)?: deliverInPlace(&batch, from: receiver, to: body, version: version)
            case let .message(body)?: deliverMessages(&batch, from: receiver, to: body, version: version)
            case nil: deliverMessages(&batch, from: receiver, to: { dropForNoHandler($0, receiver: receiver) }, version: version, delivers: false)
            }
            switch outcome {
            case .ranDry, .stopped:
                // Once a callout, not per message: one series lookup for the batch.
                if batch.delivered > 0 && PortMetrics.attached.load(ordering: .relaxed) { metricsDelivered(batch.delivered) }
                return CalloutBatch.Outcome(handled: batch.handled > 0, drained: outcome == .ranDry)
            case .handlerChanged: continue
            }
        }
    }

    /// How a batch ended, or why it went back to read the handler again.
    private enum BatchOutcome { case ranDry, stopped, handlerChanged }

    /// The messages a batch has handled, against its limit (S-SRC1-1), and
    /// what the loop allows it: asked of each message once it is read
    /// (`PortReceiver.receive(into:admittedBy:)`).
    private struct BatchCount {
        let limit: Int
        var callout: CalloutBatch
        var handled = 0
        /// Of those, messages handed to a handler (for metrics).
        var delivered = 0

        /// After a message or a drop: may the batch read another?
        mutating func next() -> Bool {
            handled += 1
            return handled < limit
        }
    }

    /// Delivers `PortMessage`s while the handler stays `version`. One
    /// received message serves the whole run, decoded into message after
    /// message: its receivePort is set once, and what the last handler let
    /// go (the components array, the bytes of its data) is written over in
    /// place. A handler that keeps a message keeps a copy that stays as it
    /// was (copy on write). With no handler set, `handler` drops and logs.
    private func deliverMessages(
        _ batch: inout BatchCount, from receiver: PortReceiver, to handler: (PortMessage) -> Void, version: UInt64,
        delivers: Bool = true
    ) -> BatchOutcome {
        var inbox = PortMessage(arrivingOn: self)
        while true {
            guard handlerVersion.load(ordering: .acquiring) == version else {
                receiver.endBatch(&inbox)
                return .handlerChanged
            }
            switch receiver.receive(into: &inbox, admittedBy: batch.callout) {
            case .empty:
                return .ranDry
            case .notAdmitted:
                // Not taken without a look at the loop: after the look,
                // take it, or leave it queued, first in line, and end the batch.
                if Self.admitsAfterLook(&batch.callout) { continue }
                receiver.endBatch(&inbox)
                return .stopped
            case .dropped:
                tapDrop(receiver)
                receiver.drops.emitPending()
            case let .message(traceID):
                // A message with no handler is not delivered: the handler
                // drops it, and the tap reports the drop instead.
                if delivers {
                    batch.delivered &+= 1
                    if PortTap.active.load(ordering: .relaxed) { PortTap.recordDelivery(inbox, on: self, traceID: traceID) }
                }
                if let trace = inbox.traceBox {
                    deliverTraced(inbox, in: trace.context, to: handler)
                } else {
                    handler(inbox)
                }
            }
            guard _fastPath(batch.next()) else {
                receiver.endBatch(&inbox)
                return .stopped
            }
        }
    }

    /// Delivers messages read in place (`PortMessageView`) while the handler
    /// stays `version`. Each message is received into this batch's
    /// in-place message, where it stays until the next one replaces it, so
    /// that closing the port from another thread, or a nested batch, cannot
    /// release it while a handler reads it.
    // Inlined into `deliver`, its one caller, whatever the optimiser's
    // budget: a call here is paid by every message.
    @inline(__always)
    private func deliverInPlace(
        _ batch: inout BatchCount, from receiver: PortReceiver, to handler: @Sendable (borrowing PortMessageView) -> Void,
        version: UInt64
    ) -> BatchOutcome {
        let message = receiver.takeInPlaceMessage()
        defer { receiver.returnInPlaceMessage(message) }
        // The reply port of the last message: replaced only when a message
        // names another, so a stream from one sender retains nothing.
        var replyPort: Port?
        while true {
            guard handlerVersion.load(ordering: .acquiring) == version else { return .handlerChanged }
            switch receiver.receiveInPlace(into: message, replyPort: &replyPort, admittedBy: batch.callout) {
            case .empty:
                return .ranDry
            case .notAdmitted:
                if Self.admitsAfterLook(&batch.callout) { continue }
                return .stopped
            case .dropped:
                tapDrop(receiver)
                receiver.drops.emitPending()
            case let .message(traceID):
                let view = PortMessageView(arrivedOn: self, replyPort: replyPort, message: message)
                batch.delivered &+= 1
                if PortTap.active.load(ordering: .relaxed) { PortTap.recordDelivery(view, on: self, traceID: traceID) }
                if _slowPath(message.header.hasTraceContext), let trace = WireFormat.traceContext(ofHeader: message.headerFrame) {
                    deliverTraced(view, in: trace, to: handler)
                } else {
                    handler(view)
                }
            }
            guard _fastPath(batch.next()) else { return .stopped }
        }
    }

    // What follows runs on a batch's rarer paths, out of line: a batch's
    // code is fetched again at every wake-up, and what lies between its hot
    // parts is fetched with them (docs/performance.md, "Over tcp").

    /// The batch's look at the loop, when its atomics cannot tell
    /// (`CalloutBatch.admits()`).
    @inline(never)
    private static func admitsAfterLook(_ batch: inout CalloutBatch) -> Bool { batch.admits() }

    /// Delivers a message that carries a trace context, inside its span.
    @inline(never)
    private func deliverTraced(_ message: PortMessage, in context: PortTraceContext, to handler: (PortMessage) -> Void) {
        PortTracing.deliver(in: context, on: self, msgid: message.msgid) { handler(message) }
    }

    @inline(never)
    private func deliverTraced(
        _ view: borrowing PortMessageView, in context: PortTraceContext, to handler: @Sendable (borrowing PortMessageView) -> Void
    ) {
        PortTracing.deliver(in: context, on: self, msgid: view.msgid) { handler(view) }
    }

    /// The message handler and its version, read under `handlerLock`
    /// without a generic closure: returning a closure through `withLock`
    /// re-abstracted it and allocated a thunk on every message.
    private func currentHandler() -> (MessageHandler?, UInt64) {
        handlerLock.lock()
        defer { handlerLock.unlock() }
        return (handler, handlerVersion.load(ordering: .relaxed))
    }

    /// A message that arrived with no handler set: counted and logged (at
    /// most one line a second).
    private func dropForNoHandler(_ message: PortMessage, receiver: PortReceiver) {
        receiver.drops.record(.noHandler, "message \(message.msgid) arrived with no message handler set")
        if PortTap.active.load(ordering: .relaxed) { PortTap.recordDrop(on: self, msgid: message.msgid, reason: .noHandler) }
        receiver.drops.emitPending()
    }

    /// A malformed message was dropped: the tap reports it (msgid 0: it
    /// could not be read), with the reason the receiver counted.
    private func tapDrop(_ receiver: PortReceiver) {
        guard PortTap.active.load(ordering: .relaxed), let reason = receiver.drops.lastReason else { return }
        PortTap.recordDrop(on: self, msgid: 0, reason: reason)
    }
}
