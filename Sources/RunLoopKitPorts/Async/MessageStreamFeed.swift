@_spi(RunLoopKitInternals) import RunLoopKitCore
import Synchronization

/// What a `PortMessageStream` shares between the port's loop thread, which
/// feeds it, and its consumer (S-ASYNC-2): the buffer, the one waiting
/// consumer, and whether the port should be receiving.
///
/// Back-pressure is the port's own schedule: the handler unschedules the
/// port when the buffer reaches the high watermark (ending its batch,
/// S-SRC1-1), and the consumer asks for it to be scheduled again at the
/// low watermark. Every schedule change is made on the loop thread, by
/// `applySchedule`, from the state as it is then: a pause and a resume
/// decided on two threads cannot land in the wrong order.
///
/// Threading: `receive` and `applySchedule` on the port's loop thread;
/// `next` on the consumer's; `cancel` and `release` on any.
final class MessageStreamFeed: Sendable {
    private struct State {
        /// Taken in, not handed out yet, oldest first (from `head`).
        var buffer: [PortMessage] = []
        var head = 0
        var waiter: CheckedContinuation<PortMessage?, Never>?
        /// Whether the port should be scheduled: false at the high watermark.
        var wantsMessages = true
        /// The port was invalidated: the buffer is handed out, then nil.
        var portGone = false
        /// The iteration ended (cancelled, or its iterator dropped): nil at
        /// once; what the buffer holds goes back to the port.
        var ended = false
        var iteratorClaimed = false
        var handedBack = false
        /// Loop thread only: whether the port is in the loop now.
        var isScheduled = false
        /// The most messages the buffer held at once (for tests).
        var peakCount = 0

        var count: Int { buffer.count - head }

        mutating func takeFirst() -> PortMessage? {
            guard head < buffer.count else { return nil }
            let message = buffer[head]
            head += 1
            if head == buffer.count {
                buffer.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 64 && head * 2 >= buffer.count {
                buffer.removeFirst(head)
                head = 0
            }
            return message
        }

        mutating func takeAll() -> [PortMessage] {
            defer {
                buffer = []
                head = 0
            }
            // Nothing to copy: an empty slice's copy writes into the shared
            // empty-array storage (see BlockQueue.copy).
            guard head < buffer.count else { return [] }
            return Array(buffer[head...])
        }
    }

    let port: Port
    let loop: RunLoop
    let buffering: PortMessageStream.Buffering
    private let state = Locked(State())
    /// Set once in `start`, before anything else touches the feed.
    private let handlerVersion = Atomic<UInt64>(0)
    private let invalidationToken = Locked<Port.InvalidationHandlerToken?>(nil)

    init(port: Port, loop: RunLoop, buffering: PortMessageStream.Buffering) {
        self.port = port
        self.loop = loop
        self.buffering = buffering
    }

    /// Installs the stream's handler and schedules the port. On failure
    /// the port is left as it was.
    func start() throws(PortError) {
        let version = port.installHandler(.message { [self] message in receive(message) })
        handlerVersion.store(version, ordering: .releasing)
        let token = port.addInvalidationHandler { [self] _ in portWasInvalidated() }
        invalidationToken.withLock { $0 = token }
        do {
            try loop.performAndWait { [self] in try applySchedule() }
        } catch {
            port.removeInvalidationHandler(token)
            port.clearHandler(ifStill: version)
            state.withLock { $0.handedBack = true }
            if let error = error as? PortError { throw error }
            if let error = error as? RunLoopError { throw .runLoop(error) }
            throw .runLoop(.loopGone(threadName: "rlk-async-ports"))
        }
    }

    // MARK: - The loop thread's side

    /// The port's handler: hands the message to a waiting consumer, or
    /// buffers it; at the high watermark (or after the end) it stops the
    /// port, which ends the batch.
    private func receive(_ message: PortMessage) {
        let (waiter, stop): (CheckedContinuation<PortMessage?, Never>?, Bool) = state.withLock { state in
            if !state.ended, let waiter = state.waiter {
                state.waiter = nil
                return (waiter, false)
            }
            // After the end the message is kept too: it goes back to the port.
            state.buffer.append(message)
            state.peakCount = max(state.peakCount, state.count)
            if state.count >= buffering.highWatermark { state.wantsMessages = false }
            return (nil, !state.wantsMessages || state.ended)
        }
        waiter?.resume(returning: message)
        if stop { try? applySchedule() }
    }

    /// Schedules or unschedules the port as the state says now. Loop thread.
    private func applySchedule() throws(PortError) {
        let (want, isScheduled) = state.withLock { ($0.wantsMessages && !$0.ended && !$0.portGone, $0.isScheduled) }
        if want && !isScheduled {
            try port.schedule(in: loop, forMode: .default)
            state.withLock { $0.isScheduled = true }
        } else if !want && isScheduled {
            port.remove(from: loop, forMode: .default)
            state.withLock { $0.isScheduled = false }
        }
    }

    private func portWasInvalidated() { releaseWaiter { $0.portGone = true } }

    /// Changes the state so that nothing more will be handed out, and
    /// resumes a waiting consumer with nil (it waits only on an empty buffer).
    private func releaseWaiter(_ change: (inout State) -> Void) {
        let waiter: CheckedContinuation<PortMessage?, Never>? = state.withLock { state in
            change(&state)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }

    // MARK: - The consumer's side

    func claimIterator() {
        let first = state.withLock { state in
            defer { state.iteratorClaimed = true }
            return !state.iteratorClaimed
        }
        precondition(first, "PortMessageStream: iterated twice. A port's message stream has one consumer: iterate it once, or call messages() again after the first iteration ended.")
    }

    /// The next message, waiting for one if none is buffered.
    func next() async -> PortMessage? {
        if let ready = takeReady() { return ready.message }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<PortMessage?, Never>) in
                let ready: Ready?? = state.withLock { state in
                    if let ready = Self.take(&state, low: buffering.lowWatermark) { return .some(ready) }
                    if state.ended || state.portGone { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                guard let ready else { return }
                if ready?.resumesPort == true { resumeReceiving() }
                continuation.resume(returning: ready?.message)
            }
        } onCancel: {
            end()
        }
    }

    /// A message taken from the buffer, and whether taking it brought the
    /// buffer down to the low watermark, so that the port receives again.
    private struct Ready {
        let message: PortMessage?
        let resumesPort: Bool
    }

    /// A buffered message or the end, without waiting; nil if the consumer must wait.
    private func takeReady() -> Ready? {
        let ready: Ready? = state.withLock { state in
            if let ready = Self.take(&state, low: buffering.lowWatermark) { return ready }
            if state.ended || state.portGone { return Ready(message: nil, resumesPort: false) }
            return nil
        }
        if ready?.resumesPort == true { resumeReceiving() }
        return ready
    }

    /// Takes the oldest buffered message, unless the iteration ended.
    private static func take(_ state: inout State, low: Int) -> Ready? {
        guard !state.ended, let message = state.takeFirst() else { return nil }
        let resumes = !state.wantsMessages && state.count <= low
        if resumes { state.wantsMessages = true }
        return Ready(message: message, resumesPort: resumes)
    }

    private func resumeReceiving() {
        loop.perform { [self] in try? applySchedule() }
    }

    /// The iteration ended (its task cancelled): nil from now on; the port
    /// stops receiving on its loop thread. Any thread, never blocks.
    private func end() {
        releaseWaiter { $0.ended = true }
        loop.perform { [self] in try? applySchedule() }
    }

    /// The iterator went, or the sequence went without one: the port is
    /// handed back, on its loop thread and before this returns, so that
    /// whatever the caller does with the port next finds it free.
    func release(byIterator: Bool) {
        let handBack = state.withLock { state in
            guard !state.handedBack, byIterator || !state.iteratorClaimed else { return false }
            state.handedBack = true
            return true
        }
        guard handBack else { return }
        end()
        let version = handlerVersion.load(ordering: .acquiring)
        let token = invalidationToken.withLock { $0 }
        let work: @Sendable () -> Void = { [self] in
            try? applySchedule()  // off the loop first: a port with no handler drops what arrives
            if let token { port.removeInvalidationHandler(token) }
            port.clearHandler(ifStill: version)
            let unread = state.withLock { $0.takeAll() }
            if !unread.isEmpty { port.requeue(unread) }
        }
        // The loop thread is RunLoopKit's own and runs only port handlers,
        // so the wait is short. If it is gone (the process is exiting),
        // the port is not receiving anyway.
        _ = try? loop.performAndWait(work)
    }

    /// The most messages the buffer held at once.
    var peakBufferedCount: Int { state.withLock { $0.peakCount } }
}
