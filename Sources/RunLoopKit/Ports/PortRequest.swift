import Glibc
import Synchronization

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
        let replyPort = try context.replyPort(level: level, transport: address.isInThisProcess ? .inproc : .ipc, loop: loop, mode: mode)
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

    // MARK: - Asynchronous request

    /// Sends a request with a fresh reply port and awaits the reply, without
    /// blocking any thread: the reply port receives on RunLoopKit's
    /// `rlk-async-ports` loop thread.
    /// - Throws: what `send` throws; `.timedOut` after `timeout`; `.peerDied`
    ///   / `.invalidPort` if this port becomes invalid first.
    public func request(
        msgid: UInt32, components: [PortMessage.Component] = [], timeout: Duration
    ) async throws(PortError) -> PortMessage {
        let deadline: UInt64
        do { deadline = try MonotonicClock.instant(after: timeout, "request timeout") } catch { throw .runLoop(error) }
        let loop = try AsyncPorts.loop()
        let replyPort = try Port(transport: address.isInThisProcess ? .inproc : .ipc)
        defer { replyPort.invalidate() }
        let outcome = AsyncOutcome()
        do {
            return try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PortMessage, any Error>) in
                outcome.arm(continuation)
                replyPort.setMessageHandler { reply in outcome.finish(.success(reply)) }
                // On the port's death, a reply the peer sent just before may
                // still be on its way: fail only after a short grace.
                let token = addInvalidationHandler { [self] _ in
                    let grace = try? loop.perform(afterDelay: MonotonicClock.seconds(Port.replyGraceNanoseconds)) { [self] in
                        outcome.finish(.failure(invalidError()))
                    }
                    if grace == nil { outcome.finish(.failure(invalidError())) }
                    outcome.onFinish { grace?.invalidate() }
                }
                outcome.onFinish { [self] in removeInvalidationHandler(token) }
                do throws(PortError) {
                    try replyPort.schedule(in: loop, forMode: .default)
                    let timer = try? loop.perform(afterDelay: MonotonicClock.seconds(deadline &- MonotonicClock.now())) {
                        outcome.finish(.failure(PortError.timedOut(TimeoutError(operation: "request \(msgid) to \(self): waiting for its reply", limit: timeout))))
                    }
                    outcome.onFinish { timer?.invalidate() }
                    try send(msgid: msgid, components: components, replyPort: replyPort, deadline: SendDeadline(instant: deadline))
                } catch {
                    outcome.finish(.failure(error))
                }
            }
        } catch let error as PortError {
            throw error
        } catch {
            throw .invalidPort("\(self): \(error)")
        }
    }

    // MARK: - Messages as an AsyncSequence

    /// The messages that reach this local port, as an AsyncSequence. The port
    /// receives on RunLoopKit's `rlk-async-ports` loop thread; the sequence
    /// ends when the port is invalidated. Messages are buffered without
    /// bound until iterated (nothing is dropped). Replaces any message handler.
    /// - Throws: `.notLocal`, `.invalidPort`, `.scheduledOnAnotherLoop`.
    public func messages() throws(PortError) -> AsyncStream<PortMessage> {
        guard isLocal else { throw .notLocal(description) }
        let (stream, continuation) = AsyncStream.makeStream(of: PortMessage.self, bufferingPolicy: .unbounded)
        setMessageHandler { continuation.yield($0) }
        let token = addInvalidationHandler { _ in continuation.finish() }
        do {
            try schedule(in: try AsyncPorts.loop(), forMode: .default)
        } catch {
            // Leave the port as it was: no handler feeding a stream nobody holds.
            removeInvalidationHandler(token)
            setMessageHandler(nil)
            continuation.finish()
            throw error
        }
        return stream
    }
}
