import FoundationEssentials
import Glibc
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The path of every send: Port → encode → send channel → socket
/// (S-PORT-4, S-PORT-8).
extension Port {
    /// Sends a message to this port (NSPort `sendBeforeDate:`), waiting for
    /// room until `deadline` if the port's queue is full (S-PORT-4).
    ///
    /// - Throws: `.invalidPort` / `.peerDied` if the port is invalid;
    ///   `.componentNotTransferable` if a port component or the reply port
    ///   cannot reach this port's process (an inproc port to another
    ///   process); `.messageTooLarge` past the wire format's limits;
    ///   `.timedOut` if there was no room by the deadline. Nothing is sent
    ///   when it throws.
    public func send(
        msgid: UInt32 = 0, components: [PortMessage.Component] = [], replyPort: Port? = nil, before deadline: Date
    ) throws(PortError) {
        try send(msgid: msgid, components: components, replyPort: replyPort, deadline: SendDeadline(deadline))
    }

    /// Sends `message`'s msgid, components and reply port to this port.
    public func send(_ message: PortMessage, before deadline: Date) throws(PortError) {
        try send(msgid: message.msgid, components: message.components, replyPort: message.replyPort,
                 deadline: SendDeadline(deadline))
    }

    /// Sends a message of one data component, `bytes`, given as they are:
    /// what `send(msgid:components:replyPort:before:)` sends for
    /// `[.data(Data(bytes))]`, byte for byte, without a `Data` made or read
    /// for it (for streams of many messages: docs/performance.md, "The port path"). The
    /// receiver cannot tell the two apart.
    ///
    /// - Throws: as `send(msgid:components:replyPort:before:)`.
    public func send(
        msgid: UInt32 = 0, bytes: UnsafeRawBufferPointer, replyPort: Port? = nil, before deadline: Date
    ) throws(PortError) {
        let deadline = SendDeadline(deadline)
        let (channel, traceID, sendTime) = try beginSend(msgid: msgid, components: { [.data(Data(bytes))] }, replyPort: replyPort)
        // For the tap: the W3C trace id a traced send carries (two words, so
        // that an untraced send pays two stores, not an optional context).
        var w3cTraceID = TapW3CTraceID.none
        do {
            let encoder = try MessageEncoder.sizing(
                msgid: msgid, dataCount: bytes.count, replyPort: replyPort, traceID: traceID, carriedTo: distance,
                relativeLimit: { channel.withGuaranteedReference { $0.relativeLimit } },
                // U-CHECKING-PORTS (docs/unsafe-sites.md).
                checkingPorts: { [unowned(unsafe) self] (port, role) throws(PortError) in try checkCanCarry(port, as: role) })
            // Traced apart: an untraced send pays one load for tracing.
            if _slowPath(PortTracing.active.load(ordering: .relaxed)), let trace = PortTracing.outgoingContext(to: self, msgid: msgid) {
                w3cTraceID = TapW3CTraceID(trace)
                try sendTraced(encoder, trace: trace, on: channel, deadline: deadline, largeComponents: { [.data(Data(bytes))] }) {
                    encoder.writePacked(bytes: bytes, into: $0)
                }
            } else {
                try send(encoder, on: channel, deadline: deadline, largeComponents: { [.data(Data(bytes))] }) {
                    encoder.writePacked(bytes: bytes, into: $0)
                } writeCompact: {
                    encoder.writeCompact(bytes: bytes, to: $1, into: $0)
                }
            }
        } catch {
            if traceID != nil {
                PortTap.recordFailedSend(
                    to: self, msgid: msgid, components: [.data(Data(bytes))], replyPort: replyPort, error: error, w3cTraceID: w3cTraceID)
            }
            throw failedSend(error)
        }
        if _slowPath(traceID != nil), let traceID {
            PortTap.recordSend(to: self, msgid: msgid, bytes: bytes, replyPort: replyPort, traceID: traceID, time: sendTime, w3cTraceID: w3cTraceID)
        }
        if _slowPath(PortMetrics.attached.load(ordering: .relaxed)) { metricsSeries()?.sent(1) }
    }

    /// The path of every send: Port → encode → send channel → socket.
    func send(msgid: UInt32, components: [PortMessage.Component], replyPort: Port?, deadline: SendDeadline) throws(PortError) {
        let (channel, traceID, sendTime) = try beginSend(msgid: msgid, components: { components }, replyPort: replyPort)
        var w3cTraceID = TapW3CTraceID.none
        do {
            // unowned(unsafe): the closure lives for the call, while `self`
            // is alive; a counted capture of a Port would take Swift's slow
            // retain and release (its counts live in a side table) on every send.
            let encoder = try MessageEncoder.sizing(
                msgid: msgid, components: components, replyPort: replyPort, traceID: traceID, carriedTo: distance,
                relativeLimit: { channel.withGuaranteedReference { $0.relativeLimit } },
                // U-CHECKING-PORTS (docs/unsafe-sites.md).
                checkingPorts: { [unowned(unsafe) self] (port, role) throws(PortError) in try checkCanCarry(port, as: role) })
            if _slowPath(PortTracing.active.load(ordering: .relaxed)), let trace = PortTracing.outgoingContext(to: self, msgid: msgid) {
                w3cTraceID = TapW3CTraceID(trace)
                try sendTraced(encoder, trace: trace, on: channel, deadline: deadline, largeComponents: { components }) {
                    encoder.writePacked(components, into: $0)
                }
            } else {
                try send(encoder, on: channel, deadline: deadline, largeComponents: { components }) {
                    encoder.writePacked(components, into: $0)
                } writeCompact: {
                    encoder.writeCompact(components, to: $1, into: $0)
                }
            }
        } catch {
            if traceID != nil {
                PortTap.recordFailedSend(to: self, msgid: msgid, components: components, replyPort: replyPort, error: error, w3cTraceID: w3cTraceID)
            }
            throw failedSend(error)
        }
        if _slowPath(traceID != nil), let traceID {
            PortTap.recordSend(
                to: self, msgid: msgid, components: components, replyPort: replyPort, traceID: traceID, time: sendTime, w3cTraceID: w3cTraceID)
        }
        if _slowPath(PortMetrics.attached.load(ordering: .relaxed)) { metricsSeries()?.sent(1) }
    }

    /// Sends what `encoder` sized: packed, written by `write` straight into
    /// the frame libzmq sends (by `writeCompact` to a tcp peer that reads
    /// version 5); or, over the pack limit, as the frames of
    /// `largeComponents()` (the multipart form).
    /// The channel is used uncounted (`beginSend`), as a guaranteed reference.
    @inline(__always)
    private func send(
        // U-SEND-CHANNEL (docs/unsafe-sites.md).
        _ encoder: MessageEncoder, on channel: Unmanaged<SendChannel>, deadline: SendDeadline,
        largeComponents: () -> [PortMessage.Component], write: (UnsafeMutableRawBufferPointer) -> Void,
        writeCompact: (UnsafeMutableRawBufferPointer, WireFormat.Destination) -> Int
    ) throws(PortError) {
        try channel.withGuaranteedReference { (channel) throws(PortError) in
            guard let size = encoder.packedSize else {
                return try encoder.withMultipartFrames(largeComponents()) { (frames) throws(PortError) in
                    if channel.isNetwork { return try channel.sendOverNetwork(frames, trace: nil, deadline: deadline) }
                    try channel.send(frames, deadline: deadline, destination: self)
                }
            }
            if channel.isNetwork {
                return try channel.sendOverNetwork(packedSize: size, deadline: deadline, write: write, writeCompact: writeCompact)
            }
            try channel.send(packedSize: size, deadline: deadline, destination: self, write: write)
        }
    }

    /// `send(_:on:deadline:largeComponents:write:)` for a message that
    /// carries `trace`: version 3 on every transport (docs/wire-format.md,
    /// "Trace context").
    @inline(never)
    private func sendTraced(
        // U-SEND-CHANNEL (docs/unsafe-sites.md).
        _ encoder: MessageEncoder, trace: PortTraceContext, on channel: Unmanaged<SendChannel>, deadline: SendDeadline,
        largeComponents: () -> [PortMessage.Component], write: (UnsafeMutableRawBufferPointer) -> Void
    ) throws(PortError) {
        try channel.withGuaranteedReference { (channel) throws(PortError) in
            guard let size = encoder.packedSize else {
                return try encoder.withMultipartFrames(largeComponents()) { (frames) throws(PortError) in
                    if channel.isNetwork { return try channel.sendOverNetwork(frames, trace: trace, deadline: deadline) }
                    try channel.send(frames, trace: trace, deadline: deadline, destination: self)
                }
            }
            if channel.isNetwork {
                return try channel.sendOverNetwork(packedSize: size, trace: trace, deadline: deadline, write: write)
            }
            try channel.send(packedSize: size, trace: trace, deadline: deadline, destination: self, write: write)
        }
    }

    /// What every send does before encoding: the validity check, the send
    /// channel, and, when the tap is on, the trace id that pairs the send
    /// with its delivery and the time taken before sending (a delivery may
    /// be reported before the send returns). Plain calls rather than a
    /// helper taking the send as a closure, whose context every send would
    /// retain and release; the channel comes uncounted for the same reason:
    /// it lives as long as this port (released in `deinit`), which the send
    /// keeps alive.
    /// A send to an invalid port is an event of the tap's too (`sendFailed`);
    /// `components` is read only then.
    @inline(__always)
    // U-SEND-CHANNEL (docs/unsafe-sites.md).
    private func beginSend(
        msgid: UInt32, components: () -> [PortMessage.Component], replyPort: Port?
    ) throws(PortError) -> (Unmanaged<SendChannel>, traceID: UInt64?, sendTime: Int64) {
        if _slowPath(!isValid) {
            let error = invalidError()
            if PortTap.active.load(ordering: .relaxed) {
                PortTap.recordFailedSend(to: self, msgid: msgid, components: components(), replyPort: replyPort, error: error)
            }
            if _slowPath(PortMetrics.attached.load(ordering: .relaxed)) { metricsSeries()?.sendFailed(error) }
            throw error
        }
        let traceID: UInt64? = _slowPath(PortTap.active.load(ordering: .relaxed)) ? PortTap.makeTraceID() : nil
        return (sendChannel(), traceID, traceID == nil ? 0 : PortTap.eventTime())
    }

    /// A send failed with `error`: when nothing can ever receive through
    /// this send right (S-PORT-8), it is invalid from now on and its
    /// handlers are told. Returns the error to throw.
    /// Runs here, with the send channel's lock released, the invalidation
    /// handlers that the channel found due while it held the lock
    /// (`destinationError`).
    private func failedSend(_ error: PortError) -> PortError {
        if _slowPath(PortMetrics.attached.load(ordering: .relaxed)) { metricsSeries()?.sendFailed(error) }
        switch error {
        case .unreachable, .peerDied, .connectionLost: invalidate(because: error)
        default: runPendingInvalidationHandlers()
        }
        return error
    }

    /// A port travels only as far as it can be reached (S-PORT-2): an
    /// inproc-only port cannot reach another process. Say so at send time,
    /// not with a silent nil at the other end.
    private func checkCanCarry(_ port: Port, as role: String) throws(PortError) {
        if port.canTravel(distance) { return }
        guard port.isValid else { throw .componentNotTransferable("\(role) \(port) is invalid") }
        // Valid, so it cannot be reached from there.
        let there = distance == .network ? "another host (over tcp)" : "process \(address.pid)"
        throw .componentNotTransferable(
            "\(role) \(port) is \(port.transport)-only and this message goes to \(there); make it with Port(transport: \(distance == .network ? ".tcp(…)" : ".\(distance.transport)"))")
    }

    /// Whether this port may go in a message to a port `distance` away:
    /// valid, and reachable from there (S-PORT-2). `checkCanCarry` says
    /// why not.
    @inline(__always)
    func canTravel(_ distance: PortRoute.Reach) -> Bool { isValid && !(address.reach < distance) }

    /// The send channel, made on the first send; the port holds it (one
    /// count) until `deinit`.
    // U-SEND-CHANNEL (docs/unsafe-sites.md).
    private func sendChannel() -> Unmanaged<SendChannel> {
        let bits = channelBits.load(ordering: .acquiring)
        if bits != 0 { return Unmanaged<SendChannel>.fromOpaque(UnsafeRawPointer(bitPattern: bits)!) }
        // First send (perhaps on two threads at once): the first channel stored wins.
        let made = Unmanaged.passRetained(SendChannel(address: address, localReceiver: receiver))
        let madeBits = UInt(bitPattern: made.toOpaque())
        let (stored, current) = channelBits.compareExchange(expected: 0, desired: madeBits, ordering: .acquiringAndReleasing)
        if stored { return made }
        made.release()
        return Unmanaged<SendChannel>.fromOpaque(UnsafeRawPointer(bitPattern: current)!)
    }

    /// Whether a send waiting for room should give up: the port became
    /// invalid, or its transport found it gone (`PortRoute.vanished`).
    /// Called with the send channel's lock held: the port is invalidated
    /// here, but its handlers run only once the send has let the lock go
    /// (`failedSend`).
    func destinationError() -> PortError? {
        if !isValid { return invalidError() }
        if let vanished = address.route.vanished(address, described: description) {
            invalidateDeferringHandlers(because: vanished)
            return invalidError()
        }
        return nil
    }
}
