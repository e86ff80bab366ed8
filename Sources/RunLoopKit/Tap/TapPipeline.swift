internal import CLinuxSupport
import Glibc
import Synchronization
import ZeroMQ

/// Carries tap events from the threads that send and receive to the
/// sniffer: a bounded queue filled under a short lock, drained by the
/// `rlk-tap` loop thread, which encodes each event as a JSON line and sends
/// it on a PUSH socket without ever blocking. Whatever cannot go on (queue
/// full, no sniffer, sniffer too slow) is dropped and counted.
final class TapPipeline: @unchecked Sendable {
    // @unchecked Sendable: queue and configuration are guarded by `lock`;
    // the socket is used only on the tap thread.
    static let shared = TapPipeline()

    /// Events waiting for the tap thread at most; beyond, they are dropped.
    static let queueCapacity = 16_384
    /// Events libzmq queues towards the sniffer before sends would block.
    static let socketHighWaterMark: Int32 = 10_000

    private let lock = Lock()
    // Guarded by lock.
    private var queue: [PortTapEvent] = []
    // Guarded by lock: the drain's spare buffer, swapped with `queue`.
    private var spare: [PortTapEvent] = []
    /// Leading bytes of each data component an event carries.
    private let dataBytes = Atomic<Int>(16)
    // Guarded by lock: set once by start.
    private var thread: LoopThread?
    private var loop: RunLoop?
    private var socket: Socket?
    private var drainSource: CustomSource?
    private let dropped = Atomic<UInt64>(0)
    private let encoder = JSONEncoder()
    /// Serialises use of the socket: the tap thread's drains, and the last
    /// drain at process exit.
    private let drainLock = Lock()
    /// How long start waits for a listening sniffer to connect, so that the
    /// first events are not dropped for want of a connection.
    static let connectWait: TimeInterval = 0.2

    var droppedCount: UInt64 { dropped.load(ordering: .relaxed) }

    func start(endpoint: String, dataBytes: Int) throws(PortError) {
        try lock.withLock { () throws(PortError) -> Void in
            self.dataBytes.store(dataBytes, ordering: .relaxed)
            guard thread == nil else { return }
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
                socket = push
                if crossProcess { OutboundFlush.shared.atExit { TapPipeline.shared.drainAtExit() } }
            } catch {
                made.stop()
                throw .zeroMQ(error)
            }
            let source = CustomSource { [self] in drain() }
            made.runLoop?.add(source, forMode: .common)
            drainSource = source
            loop = made.runLoop
            thread = made
        }
    }

    /// Any thread: queues one event, or counts it as dropped. Bounded cost:
    /// building the summary, a short lock, and at most one wake-up per batch.
    func record(
        kind: PortTapEvent.Kind, time: Int64, destination: Port, msgid: UInt32, components: [PortMessage.Component],
        source: Port?, traceID: UInt64?
    ) {
        let headBytes = dataBytes.load(ordering: .relaxed)
        let event = PortTapEvent(
            kind: kind, time: time, pid: ProcessIdentity.current.pid,
            thread: ThreadIdentity.cachedName, source: source?.tapLabel, destination: destination.tapLabel,
            msgid: msgid, components: components.map { Self.summary(of: $0, headBytes: headBytes) },
            trace: traceID.map { String($0, radix: 16) }, dropped: 0)
        let (accepted, firstInBatch, loop, source): (Bool, Bool, RunLoop?, CustomSource?) = lock.withLock {
            guard queue.count < Self.queueCapacity else { return (false, false, nil, nil) }
            queue.append(event)
            return (true, queue.count == 1, self.loop, drainSource)
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
            let (batch, socket): ([PortTapEvent], Socket?) = lock.withLock {
                swap(&queue, &spare)
                return (spare, self.socket)
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
            lock.withLock { spare.removeAll(keepingCapacity: true) }
        }
    }

    /// At process exit: sends what is still queued, then closes the socket so
    /// that the outbound context's termination flushes it.
    private func drainAtExit() {
        drain()
        drainLock.withLock {
            lock.withLock {
                socket?.close()
                socket = nil
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
