@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The async face of a port: a request awaited without blocking a thread,
/// and a local port's messages as an AsyncSequence. Both receive on the
/// process's `rlk-async-ports` loop thread (AsyncPorts).
extension Port {
    // MARK: - Asynchronous request

    /// Sends a request with a fresh reply port and awaits the reply, without
    /// blocking any thread: the reply port receives on RunLoopKit's
    /// `rlk-async-ports` loop thread.
    ///
    /// Cancelling the awaiting task ends the wait at once with
    /// `CancellationError` (S-ASYNC-1), as `Task.sleep` does: the reply
    /// port is invalidated and everything the request registered (its
    /// timer, its handler on this port) is removed, so a reply that comes
    /// later is dropped. A task cancelled before the call sends nothing.
    /// - Throws: `CancellationError` if the task is cancelled; otherwise a
    ///   `PortError`: what `send` throws, `.timedOut` after `timeout`,
    ///   `.peerDied` / `.invalidPort` if this port becomes invalid first.
    public func request(
        msgid: UInt32, components: [PortMessage.Component] = [], timeout: Duration
    ) async throws -> PortMessage {
        try Task.checkCancellation()
        let deadline: UInt64
        do { deadline = try MonotonicClock.instant(after: timeout, "request timeout") } catch { throw PortError.runLoop(error) }
        let loop = try AsyncPorts.loop()
        let replyPort = try Port(transport: distance.transport)
        defer { replyPort.invalidate() }
        let outcome = AsyncOutcome()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<PortMessage, any Error>) in
                // A cancellation that came first resumes it here, at once.
                outcome.arm(continuation)
                guard !outcome.isFinished else { return }
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
        } onCancel: {
            outcome.cancel()
        }
    }

    // MARK: - Messages as an AsyncSequence

    /// The messages that reach this local port, as an AsyncSequence with
    /// back-pressure (S-ASYNC-2): at most `buffering.highWatermark` wait in
    /// memory, the rest in the port's queue, so that a slow consumer holds
    /// its senders back instead of growing memory. The port receives on
    /// RunLoopKit's `rlk-async-ports` loop thread; the sequence ends when
    /// the port is invalidated. Replaces any message handler.
    ///
    /// Ending the iteration or cancelling its task (S-ASYNC-1) hands the
    /// port back: taken off the loop, its handler cleared, the messages
    /// never handed out back at the head of its queue for its next handler
    /// or stream (``PortMessageStream``).
    /// - Throws: `.notLocal`, `.invalidPort`, `.scheduledOnAnotherLoop`.
    public func messages(buffering: PortMessageStream.Buffering = .default) throws(PortError) -> PortMessageStream {
        guard isLocal else { throw .notLocal(description) }
        guard isValid else { throw invalidError() }
        let feed = MessageStreamFeed(port: self, loop: try AsyncPorts.loop(), buffering: buffering)
        try feed.start()
        return PortMessageStream(feed: feed)
    }
}
