internal import CLinuxSupport
import Glibc
import Synchronization
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Carries tap events from the threads that send and receive to the
/// sniffer: a bounded queue filled under a short lock, drained by the
/// `rlk-tap` loop thread, which encodes each event as a JSON line and sends
/// it on a PUSH socket without ever blocking. Whatever cannot go on (queue
/// full, no sniffer, sniffer too slow) is dropped and counted.
final class TapPipeline: @unchecked Sendable {
    // @unchecked Sendable: what changes is in `state` (behind its lock) or
    // atomic; `encoder` is used under `drainLock` only.
    static let shared = TapPipeline()

    /// Events waiting for the tap thread at most; beyond, they are dropped.
    static let queueCapacity = 16_384
    /// Events libzmq queues towards the sniffer before sends would block.
    static let socketHighWaterMark: Int32 = 10_000

    private struct State {
        /// Events produced so far: the last event's number (S-TAP-1).
        /// Numbered under this lock, in queue order, so that a process's
        /// events reach a sniffer in the order of their numbers.
        var produced: UInt64 = 0
        var queue: [PortTapEvent] = []
        /// The drain's spare buffer, swapped with `queue`.
        var spare: [PortTapEvent] = []
        // Set once by start; the socket is used on the tap thread (and at exit).
        var thread: LoopThread?
        var loop: RunLoop?
        var socket: Socket?
        var drainSource: CustomSource?
    }

    private let state = Locked(State())
    /// Leading bytes of each data component an event carries.
    private let dataBytes = Atomic<Int>(16)
    private let dropped = Atomic<UInt64>(0)
    /// One form for every event: keys sorted, slashes as they are (a
    /// port's path reads as a path).
    private let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    /// Serialises use of the socket: the tap thread's drains, and the last
    /// drain at process exit.
    private let drainLock = Lock()
    /// How long start waits for a listening sniffer to connect, so that the
    /// first events are not dropped for want of a connection.
    static let connectWait: TimeInterval = 0.2

    var droppedCount: UInt64 { dropped.load(ordering: .relaxed) }
    /// Events produced so far, passed on or dropped: the last event's number.
    var producedCount: UInt64 { state.withLock { $0.produced } }

    func start(endpoint: String, dataBytes: Int) throws(PortError) {
        try state.withLock { (state) throws(PortError) -> Void in
            self.dataBytes.store(dataBytes, ordering: .relaxed)
            guard state.thread == nil else { return }
            let made = LoopThread(name: "rlk-tap")
            do throws(RunLoopError) { try made.start() } catch { throw .runLoop(error) }
            do throws(ZMQError) {
                // An ipc tap uses the outbound context, which is flushed at
                // exit, so that a process's last events reach the sniffer.
                let crossProcess = !endpoint.hasPrefix("inproc://")
                let push = try (crossProcess ? OutboundFlush.shared.context : ZMQContext.shared).makeSocket(.push)
                // No sniffer yet: sends fail at once (and count as drops)
                // instead of queueing for a sniffer that may never come.
                try push.setImmediate(true)
                try push.setSendHighWaterMark(Self.socketHighWaterMark)
                try push.setLinger(milliseconds: crossProcess ? SendChannel.lingerMilliseconds : 0)
                try push.connect(endpoint)
                // With ZMQ_IMMEDIATE, pollOut means a sniffer is connected.
                let deadline = MonotonicClock.instant(secondsFromNow: Self.connectWait)
                while try !push.events.contains(.pollOut) && MonotonicClock.now() < deadline {
                    var descriptor = pollfd(fd: try push.fileDescriptor, events: Int16(POLLIN), revents: 0)
                    _ = poll(&descriptor, 1, 10)
                }
                push.releaseOwnership()
                state.socket = push
                if crossProcess { OutboundFlush.shared.atExit { TapPipeline.shared.drainAtExit(lingerMilliseconds: $0) } }
            } catch {
                made.stop()
                throw .zeroMQ(error)
            }
            let source = CustomSource { [self] in drain() }
            made.runLoop?.add(source, forMode: .common)
            state.drainSource = source
            state.loop = made.runLoop
            state.thread = made
        }
    }

    /// Any thread: queues one event, or counts it as dropped. Bounded cost:
    /// building the summary, a short lock, and at most one wake-up per batch.
    func record(
        kind: PortTapEvent.Kind, time: Int64, destination: Port, msgid: UInt32, components: [PortMessage.Component],
        source: Port?, traceID: UInt64?
    ) {
        let headBytes = dataBytes.load(ordering: .relaxed)
        var event = PortTapEvent(
            kind: kind, time: time, pid: ProcessIdentity.current.pid,
            thread: ThreadIdentity.cachedName, source: source?.tapLabel, destination: destination.tapLabel,
            msgid: msgid, components: components.map { Self.summary(of: $0, headBytes: headBytes) },
            trace: traceID.map { String($0, radix: 16) }, dropped: 0, started: ProcessIdentity.current.startTime)
        let (accepted, firstInBatch, loop, source): (Bool, Bool, RunLoop?, CustomSource?) = state.withLock { state in
            // Numbered whether it goes on or not: a dropped event leaves a gap.
            state.produced += 1
            event.seq = state.produced
            guard state.queue.count < Self.queueCapacity else { return (false, false, nil, nil) }
            state.queue.append(event)
            return (true, state.queue.count == 1, state.loop, state.drainSource)
        }
        guard accepted else {
            dropped.wrappingAdd(1, ordering: .relaxed)
            return
        }
        if firstInBatch {
            source?.signal()
            loop?.wakeUp()
        }
    }

    /// On the tap thread: sends everything queued.
    private func drain() {
        drainLock.withLock {
            let (batch, socket): ([PortTapEvent], Socket?) = state.withLock { state in
                swap(&state.queue, &state.spare)
                return (state.spare, state.socket)
            }
            if let socket {
                for var event in batch {
                    event.dropped = dropped.load(ordering: .relaxed)
                    guard var line = try? encoder.encode(event) else { continue }
                    line.append(UInt8(ascii: "\n"))
                    let sent = (try? socket.send(line, dontWait: true)) ?? false
                    if !sent { dropped.wrappingAdd(1, ordering: .relaxed) }
                }
                socket.releaseOwnership()
            }
            state.withLock { $0.spare.removeAll(keepingCapacity: true) }
        }
    }

    /// At process exit: sends what is still queued, then closes the socket so
    /// that the outbound context's termination flushes it, for what is left
    /// of the exit bound at most (`lingerMilliseconds`).
    private func drainAtExit(lingerMilliseconds: Int32) {
        drain()
        drainLock.withLock {
            state.withLock { state in
                try? state.socket?.setLinger(milliseconds: lingerMilliseconds)
                state.socket?.close()
                state.socket = nil
            }
        }
    }

    private static func summary(of component: PortMessage.Component, headBytes: Int) -> PortTapEvent.Component {
        switch component {
        case let .port(port):
            return PortTapEvent.Component(kind: .port, size: 0, head: port.tapLabel)
        case let .data(data):
            guard headBytes > 0, !data.isEmpty else { return PortTapEvent.Component(kind: .data, size: data.count) }
            let hex = data.prefix(headBytes).map { byte in
                let digits = String(byte, radix: 16)
                return byte < 16 ? "0" + digits : digits
            }.joined()
            return PortTapEvent.Component(kind: .data, size: data.count, head: hex)
        }
    }
}
