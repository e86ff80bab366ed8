import RunLoopKit

/// One LoopThread of a child: it owns a few receiving ports, and a timer
/// on its loop sends bursts on a few outgoing streams, to ports of other
/// threads of this process and of other processes. Its state is confined
/// to its thread: everything else reaches it through `perform`.
final class Worker: @unchecked Sendable {
    // @unchecked Sendable: the mutable state below is touched only on `thread`.
    let serial: UInt32
    let senderID: UInt64
    let thread: LoopThread
    private let context: ChildContext
    private var generator: SeededGenerator
    private var streams: [OutgoingStream] = []
    private var endpoints: [Endpoint] = []
    private var nextStreamID: UInt64 = 0
    private var sending = true
    private var timer: Timer?

    private static let tickInterval = 0.01
    private static let sendTimeout = 0.2
    private static let markerTimeout = 1.0
    private static let answerTimeout = Duration.seconds(20)

    /// Starts the thread, its ports and its sending.
    init(serial: UInt32, context: ChildContext) throws {
        self.serial = serial
        self.context = context
        senderID = Identifiers.make(incarnation: context.incarnation, serial: serial)
        generator = SeededGenerator(seed: context.options.seed, stream: senderID)
        thread = LoopThread(name: "soak-w\(serial)")
        try thread.start()
        try onThread { [self] in
            for index in 0..<context.options.portsPerWorker { try makeEndpoint(inproc: index == 0) }
            let timer = try Timer(timeInterval: Self.tickInterval, repeats: true) { [unowned self] _ in tick() }
            RunLoop.current.add(timer, forMode: .default)
            self.timer = timer
        }
    }

    /// Runs `body` on the worker's thread and waits, within a generous bound
    /// (a worker that does not answer is hung: that fails the run).
    func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) throws -> T {
        try thread.performAndWait(timeout: Self.answerTimeout, body)
    }

    // MARK: - Receiving ports

    /// A new receiving port on this thread: the first of a worker is inproc,
    /// the others ipc and named. Called on the thread.
    func makeEndpoint(inproc: Bool) throws {
        let endpoint = try Endpoint(
            id: Identifiers.make(incarnation: context.incarnation, serial: context.nextSerial()),
            transport: inproc ? .inproc : .ipc, workerSerial: serial, readsInPlace: generator.next() % 2 == 0,
            context: context, loop: RunLoop.current)
        endpoints.append(endpoint)
        context.localEndpoints.add(endpoint)
        if let entry = endpoint.directoryEntry { context.announce(added: [entry]) }
    }

    /// The chaos schedule invalidated one of this worker's ports (from its
    /// own thread): make a new one in its place. Called on the thread.
    func replace(_ old: Endpoint) throws {
        guard let index = endpoints.firstIndex(where: { $0 === old }) else { return }
        endpoints.remove(at: index)
        try makeEndpoint(inproc: old.name == nil)
    }

    // MARK: - Sending

    private func tick() {
        guard sending else { return }
        for index in streams.indices where !streams[index].destination.isValid {
            endStream(at: index, because: nil)
        }
        streams.removeAll { $0.ended }
        var attempts = 0
        while streams.count < context.options.streamsPerWorker && attempts < 4 {
            attempts += 1
            openStream()
        }
        let fromBytes = generator.next() % 2 == 0
        var sent = 0
        for index in streams.indices {
            let burst = Int(generator.next() % UInt64(context.options.maxBurst + 1))
            for _ in 0..<burst {
                guard send(on: index, fromBytes: fromBytes) else { break }
                sent += 1
            }
        }
        streams.removeAll { $0.ended }
        if sent > 0 { context.counters.update { $0.messagesSent += sent } }
    }

    /// A stream to a port of another thread here, or of another process.
    private func openStream() {
        let key = StreamKey(senderID: senderID, streamID: nextStreamID)
        let wantsRemote = generator.next() % 2 == 0
        if wantsRemote, let right = context.remotePorts.random(using: &generator) {
            streams.append(OutgoingStream(key: key, destination: right.port, destinationID: right.endpointID, remote: right))
        } else if let endpoint = context.localEndpoints.random(notOf: serial, using: &generator) {
            streams.append(OutgoingStream(key: key, destination: endpoint.port, destinationID: endpoint.id, remote: nil))
        } else {
            return
        }
        nextStreamID += 1
        context.counters.update { $0.streamsOpened += 1 }
    }

    /// One message on a stream; false when the burst should end there.
    private func send(on index: Int, fromBytes: Bool) -> Bool {
        let stream = streams[index]
        let message = TrafficMessage(senderID: senderID, streamID: stream.key.streamID, number: stream.sent)
        do {
            try Self.send(message, kind: .data, to: stream.destination, fromBytes: fromBytes, timeout: Self.sendTimeout)
            streams[index].sent += 1
            return true
        } catch .timedOut {
            // The receiver is slow, or stopped and not yet invalidated:
            // nothing was sent; the same number goes next time.
            context.counters.update { $0.sendTimeouts += 1 }
            return false
        } catch {
            endStream(at: index, because: error)
            return false
        }
    }

    private static func send(
        _ message: TrafficMessage, kind: TrafficMessage.Kind, to port: Port, fromBytes: Bool, timeout: Double
    ) throws(PortError) {
        let deadline = Date() + timeout
        if fromBytes {
            let result: Result<Void, PortError> = message.withBytes { bytes in
                Result { () throws(PortError) in try port.send(msgid: kind.rawValue, bytes: bytes, before: deadline) }
            }
            try result.get()
        } else {
            let data = message.withBytes { Data($0) }
            try port.send(msgid: kind.rawValue, components: [.data(data)], before: deadline)
        }
    }

    /// The destination is invalid (seen by `isValid`, or a send failed with
    /// `error`): the stream ends without a marker.
    private func endStream(at index: Int, because error: PortError?) {
        let stream = streams[index]
        streams[index].ended = true
        switch error {
        case nil, .invalidPort?, .peerDied?, .unreachable?:
            context.counters.update { $0.streamsEndedByInvalidDestination += 1 }
        case let other?:
            context.violations.record("worker \(Identifiers.describe(senderID)): unexpected send error to \(stream.destination): \(other)")
        }
        if let remote = stream.remote {
            if case .peerDied? = error { context.remotePorts.notices.notice(remote.watch, bySend: true) }
            if case .peerDied? = error {} else { context.remotePorts.sawInvalid(stream.destinationID) }
        }
    }

    /// Closes a stream with its end-of-stream marker, which tells the
    /// receiver how many were sent (it checks that it got exactly those).
    private func closeWithMarker(_ index: Int) {
        let stream = streams[index]
        streams[index].ended = true
        let marker = TrafficMessage(senderID: senderID, streamID: stream.key.streamID, number: stream.sent)
        do {
            try Self.send(marker, kind: .endOfStream, to: stream.destination, fromBytes: false, timeout: Self.markerTimeout)
            context.counters.update { $0.streamsClosedWithMarker += 1 }
        } catch {
            // The destination went meanwhile: it checks nothing more.
        }
    }

    /// The chaos schedule ends one stream early (a new one opens at the
    /// next tick). Called on the thread.
    func rotateStream() {
        guard !streams.isEmpty else { return }
        closeWithMarker(Int(generator.next() % UInt64(streams.count)))
        streams.removeAll { $0.ended }
    }

    // MARK: - Phases

    /// Stops sending; returns the open streams. Called on the thread.
    func stopSending() -> [StreamRecord] {
        sending = false
        return streams.map(\.record)
    }

    /// Stops sending and closes every stream with its marker, letting go of
    /// the send rights they held. Called on the thread.
    func pause() {
        sending = false
        for index in streams.indices { closeWithMarker(index) }
        streams.removeAll()
    }

    func resume() { sending = true }

    /// Before the thread stops: streams closed with markers, ports
    /// invalidated, the timer gone. Called on the thread; returns the ports
    /// that were named, for the directory.
    func retire() -> [UInt64] {
        pause()
        timer?.invalidate()
        timer = nil
        let named = endpoints.filter { $0.name != nil }.map(\.id)
        for endpoint in endpoints {
            context.localEndpoints.remove(endpoint)
            endpoint.invalidate()
        }
        endpoints.removeAll()
        return named
    }
}
