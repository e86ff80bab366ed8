import Glibc
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

extension Port {
    /// After a request's destination dies, how long a reply it sent just
    /// before may still arrive: the request fails after this grace.
    static let replyGraceNanoseconds: UInt64 = 100_000_000

    // MARK: - Synchronous request (CFMessagePortSendRequest)

    /// Sends a request with a reply port and waits for the reply, running
    /// the current thread's loop in a private mode meanwhile (as
    /// CFMessagePortSendRequest does), so that a loop thread can call it: its
    /// loop keeps its other modes' items waiting, nothing is lost, and the
    /// thread does not block outside its loop.
    ///
    /// The first message that reaches the reply port is the reply. Each
    /// thread reuses one reply port per nesting level; after a timeout that
    /// port is discarded, so that a late reply can never answer the next
    /// request.
    ///
    /// - Parameters:
    ///   - msgid: the request's message id.
    ///   - components: the request's data and port components.
    ///   - sendTimeout: how long the send may wait for room (S-PORT-4).
    ///   - receiveTimeout: how long to wait for the reply after sending.
    /// - Throws: what `send` throws; `.timedOut` when no reply came in time;
    ///   `.peerDied` / `.invalidPort` as soon as this port becomes invalid
    ///   while waiting.
    public func sendRequest(
        msgid: UInt32, components: [PortMessage.Component] = [],
        sendTimeout: TimeInterval, receiveTimeout: TimeInterval
    ) throws(PortError) -> PortMessage {
        do {
            try RunLoopError.validate(sendTimeout, "send timeout")
            try RunLoopError.validate(receiveTimeout, "receive timeout")
        } catch {
            throw .runLoop(error)
        }
        let loop: RunLoop
        do { loop = try RunLoop.forCurrentThread() } catch { throw .runLoop(error) }
        let context = RequestContext.current()
        let level = context.enter()
        defer { context.leave() }
        let mode = context.mode(level: level)
        let replyPort = try context.replyPort(level: level, transport: distance.transport, loop: loop, mode: mode)
        context.clearReply(level)
        // Wake the private run at once if this port dies meanwhile.
        let token = addInvalidationHandler { _ in loop.stop() }
        defer { removeInvalidationHandler(token) }

        try send(msgid: msgid, components: components, replyPort: replyPort,
                 deadline: SendDeadline(instant: MonotonicClock.instant(secondsFromNow: sendTimeout)))
        var deadline = MonotonicClock.instant(secondsFromNow: receiveTimeout)
        var deathNoticed = false
        while true {
            if let reply = context.takeReply(level) { return reply }
            let now = MonotonicClock.now()
            if !isValid {
                // A peer that replied and then exited: its reply may still be
                // on its way behind the news of its death. Wait a little more.
                if !deathNoticed {
                    deathNoticed = true
                    deadline = min(deadline, now + Port.replyGraceNanoseconds)
                } else if now >= deadline {
                    throw invalidError()
                }
            }
            guard now < deadline else {
                context.discardReplyPort(level: level, transport: replyPort.transport)
                throw .timedOut(TimeoutError(operation: "request \(msgid) to \(self): waiting for its reply", limit: .seconds(receiveTimeout)))
            }
            context.runPrivateMode(level: level, on: loop, deadline: deadline)
        }
    }
}
