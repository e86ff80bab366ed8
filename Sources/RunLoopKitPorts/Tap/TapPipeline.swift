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
        /// Every event numbered up to this one has left the tap (passed on
        /// or dropped): what the count file says besides `produced`.
        var settled: UInt64 = 0
        /// The process's count file (the default, readers' directory mode),
        /// and whether a write of it is already due.
        var countFile: TapCountFile?
        var countWriteDue = false
        var queue: [PortTapEvent] = []
        /// The drain's spare buffer, swapped with `queue`.
        var spare: [PortTapEvent] = []
        // Set once by start; the sockets are used on the tap thread (and at exit).
        var thread: LoopThread?
        var loop: RunLoop?
        /// The one sniffer of an explicit endpoint.
        var socket: Socket?
        /// Or every sniffer in the readers' directory (the default).
        var readers: TapReaders?
        var drainSource: CustomSource?
        var watchSource: SocketSource?
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
    /// The sniffers the tap reports to now (the readers' directory's, or 1
    /// for an explicit endpoint).
    var readerCount: Int {
        drainLock.withLock { state.withLock { $0.socket != nil ? 1 : $0.readers?.sockets.count ?? 0 } }
    }

    /// Events produced so far, passed on or dropped: the last event's number.
    var producedCount: UInt64 { state.withLock { $0.produced } }

    /// Starts the tap thread. With an endpoint, the tap reports to that
    /// one sniffer; with none, to every sniffer in the readers' directory
    /// (`TapReaders`), as many as come and go.
    func start(endpoint: String?, dataBytes: Int) throws(PortError) {
        // Resolved first: the runtime directory's checks may throw.
        let readersDirectory = endpoint == nil ? try TapReaders.directoryPath() : nil
        try state.withLock { (state) throws(PortError) -> Void in
            self.dataBytes.store(dataBytes, ordering: .relaxed)
            guard state.thread == nil else { return }
            let made = LoopThread(name: "rlk-tap")
            do throws(RunLoopError) { try made.start() } catch { throw .runLoop(error) }
            // An ipc tap uses the outbound context, which is flushed at
            // exit, so that a process's last events reach the sniffer.
            let crossProcess = !(endpoint?.hasPrefix("inproc://") ?? false)
            let context = crossProcess ? OutboundFlush.shared.context : ZMQContext.shared
            let linger = crossProcess ? SendChannel.lingerMilliseconds : 0
            do throws(ZMQError) {
                if let endpoint {
                    let push = try context.makeSocket(.push)
                    try Self.configure(push, lingerMilliseconds: linger)
                    try push.connect(endpoint)
                    push.releaseOwnership()
                    state.socket = push
                } else if let readersDirectory {
                    let readers = TapReaders(directory: readersDirectory, context: context, lingerMilliseconds: linger)
                    if let watch = readers.startWatching() {
                        let source = SocketSource(fileDescriptor: watch) { [self] _, _ in
                            drainLock.withLock { readers.directoryChanged() }
                        }
                        do throws(RunLoopError) { try made.runLoop?.add(source, forMode: .common) } catch {}
                        state.watchSource = source
                    }
                    readers.refresh()
                    state.readers = readers
                    if let directory = try? PortTap.countsDirectory() {
                        let countFile = TapCountFile(directory: directory)
                        countFile.sweep()
                        countFile.write(produced: 0, settled: 0)
                        state.countFile = countFile
                    }
                }
            } catch {
                made.stop()
                throw .zeroMQ(error)
            }
            if let socket = state.socket { Self.awaitConnection(socket) }
            if crossProcess { OutboundFlush.shared.atExit { TapPipeline.shared.drainAtExit(lingerMilliseconds: $0) } }
            let source = CustomSource { [self] in drain() }
            made.runLoop?.add(source, forMode: .common)
            state.drainSource = source
            state.loop = made.runLoop
            state.thread = made
        }
    }

    /// Waits up to `connectWait` for `push` to reach its sniffer, so that
    /// the events that follow are not dropped for want of a connection
    /// (with ZMQ_IMMEDIATE, pollOut means connected). On the thread that
    /// owns the socket, before it passes anything on.
    static func awaitConnection(_ push: Socket) {
        let deadline = MonotonicClock.instant(secondsFromNow: connectWait)
        while (try? push.events.contains(.pollOut)) != true && MonotonicClock.now() < deadline {
            guard var descriptor = (try? push.fileDescriptor).map({ pollfd(fd: $0, events: Int16(POLLIN), revents: 0) }) else { break }
            _ = poll(&descriptor, 1, 10)
        }
        push.releaseOwnership()
    }

    /// How every tap socket is set up: no sniffer yet means sends fail at
    /// once (and count as drops) instead of queueing for a sniffer that
    /// may never come; a bounded queue towards it; the exit's linger.
    static func configure(_ push: Socket, lingerMilliseconds: Int32) throws(ZMQError) {
        try push.setImmediate(true)
        try push.setSendHighWaterMark(socketHighWaterMark)
        try push.setLinger(milliseconds: lingerMilliseconds)
    }

    /// Any thread: queues one event, or counts it as dropped. Bounded cost:
    /// building the summary, a short lock, and at most one wake-up per batch.
    func record(
        kind: PortTapEvent.Kind, time: Int64, destination: Port, msgid: UInt32, components: [PortMessage.Component],
        source: Port?, traceID: UInt64?, reason: String? = nil
    ) {
        let headBytes = dataBytes.load(ordering: .relaxed)
        var event = PortTapEvent(
            kind: kind, time: time, pid: ProcessIdentity.current.pid,
            thread: ThreadIdentity.cachedName, source: source?.tapLabel, destination: destination.tapLabel,
            msgid: msgid, components: components.map { Self.summary(of: $0, headBytes: headBytes) },
            trace: traceID.map { String($0, radix: 16) }, dropped: 0, started: ProcessIdentity.current.startTime,
            reason: reason)
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
            let (batch, single, readers, upTo): ([PortTapEvent], Socket?, TapReaders?, UInt64) = state.withLock { state in
                swap(&state.queue, &state.spare)
                // Every event numbered so far is in this batch or was dropped.
                return (state.spare, state.socket, state.readers, state.produced)
            }
            let sockets = single.map { [$0] } ?? Array(readers?.sockets.values ?? [:].values)
            for var event in batch {
                event.dropped = dropped.load(ordering: .relaxed)
                guard var line = try? encoder.encode(event) else { continue }
                line.append(UInt8(ascii: "\n"))
                // No sniffer at all: the event is dropped (and counted) once;
                // otherwise once for each sniffer whose socket was full.
                if sockets.isEmpty { dropped.wrappingAdd(1, ordering: .relaxed) }
                for socket in sockets where (try? socket.send(line, dontWait: true)) != true {
                    dropped.wrappingAdd(1, ordering: .relaxed)
                }
            }
            for socket in sockets { socket.releaseOwnership() }
            let (countFile, writeNow): (TapCountFile?, Bool) = state.withLock { state in
                state.spare.removeAll(keepingCapacity: true)
                state.settled = max(state.settled, upTo)
                guard state.countFile != nil, !state.countWriteDue else { return (nil, false) }
                state.countWriteDue = true
                return (state.countFile, true)
            }
            if writeNow, countFile != nil { scheduleCountWrite() }
        }
    }

    /// On the tap thread: the count file is rewritten 100 ms after the
    /// first drain since its last write, so that while events flow it is
    /// written ten times a second at most, and once more after they stop.
    private func scheduleCountWrite() {
        let loop = state.withLock { $0.loop }
        let written = try? loop?.perform(afterDelay: Self.countWriteDelay) { [self] in
            drainLock.withLock {
                let (countFile, produced, settled) = state.withLock { state in
                    state.countWriteDue = false
                    return (state.countFile, state.produced, state.settled)
                }
                countFile?.write(produced: produced, settled: settled)
            }
        }
        if written == nil { state.withLock { $0.countWriteDue = false } }
    }

    static let countWriteDelay: TimeInterval = 0.1

    /// At process exit: sends what is still queued, then closes the sockets
    /// so that the outbound context's termination flushes them, for what is
    /// left of the exit bound at most (`lingerMilliseconds`).
    private func drainAtExit(lingerMilliseconds: Int32) {
        drain()
        drainLock.withLock {
            state.withLock { state in
                try? state.socket?.setLinger(milliseconds: lingerMilliseconds)
                state.socket?.close()
                state.socket = nil
                state.readers?.closeAll(lingerMilliseconds: lingerMilliseconds)
                // Everything left the tap: the last word, for a sniffer that reads it later.
                state.countFile?.write(produced: state.produced, settled: state.produced, exited: true)
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
