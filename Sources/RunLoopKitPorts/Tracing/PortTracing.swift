import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What the tracing bridge (the RunLoopKitTracing product) plugs into the
/// ports: it reads the sending span's context, and runs a delivery in the
/// context a message carried. The ports know W3C's fields, not
/// swift-distributed-tracing, so that a program that traces nothing links
/// none of it.
package protocol PortTraceBridge: Sendable {
    /// On the sending thread: the context a message to `port` carries, or
    /// nil (no span is current).
    func outgoingContext(to port: Port, msgid: UInt32) -> PortTraceContext?
    /// On the delivering thread: runs `deliver` (the handler's call) in
    /// `context`, the one the message carried.
    func deliver(in context: PortTraceContext, on port: Port, msgid: UInt32, _ deliver: () -> Void)
}

/// The process's tracing bridge, if one is attached.
package enum PortTracing {
    /// Whether a bridge is attached: what every send reads, one relaxed
    /// load, before it asks for a context.
    package static let active = Atomic<Bool>(false)
    /// A pthread mutex (`Locked`), which ThreadSanitizer follows: every
    /// traced send and delivery, on any thread, reads it (docs/design.md,
    /// "Locks and user code").
    private static let bridge = Locked<(any PortTraceBridge)?>(nil)

    /// Sends carry the current span's context from now on; deliveries of
    /// messages that carry one run in it.
    package static func attach(_ attached: any PortTraceBridge) {
        bridge.withLock { $0 = attached }
        active.store(true, ordering: .releasing)
    }

    /// Sends carry nothing from now on; a message that carries a context is
    /// delivered without it (`PortMessage.traceContext` still says it).
    package static func detach() {
        active.store(false, ordering: .releasing)
        bridge.withLock { $0 = nil }
    }

    static func outgoingContext(to port: Port, msgid: UInt32) -> PortTraceContext? {
        bridge.withLock { $0 }?.outgoingContext(to: port, msgid: msgid)
    }

    /// Runs `body` in `context` through the bridge, or as it is without one.
    static func deliver(in context: PortTraceContext, on port: Port, msgid: UInt32, _ body: () -> Void) {
        guard let attached = bridge.withLock({ $0 }) else { return body() }
        attached.deliver(in: context, on: port, msgid: msgid, body)
    }
}
