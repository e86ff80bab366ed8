import RunLoopKit

/// RunLoopKit's round trip: a "ping" LoopThread sends a 64-byte PortMessage
/// with its own port as the reply port; the echo (a LoopThread of this
/// process, or a child process) answers on the reply port; the ping port's
/// handler records the round trip and sends the next. This is
/// Examples/pingpong with a sample per round trip.
/// Which port the next ping goes to; touched on the ping thread only.
final class Turn: @unchecked Sendable {
    private var index = 0
    func next(_ count: Int) -> Int {
        index = (index + 1) % count
        return index
    }
}

final class PortPingPong: Contender {
    let label: String
    private let transport: Port.Transport
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    /// Makes the port that answers, and says how to release it.
    private let makeEcho: () throws -> (port: Port, release: () -> Void)
    /// The msgid of the pings (the rlk-peer child answers 1 and 3 differently).
    private let pingMsgid: UInt32
    private let placement: Placement
    /// Ports the pings go to in turn, instead of the echo's one port.
    private let spread: (() -> [Port])?

    private var pingThread: LoopThread?
    private var pingPort: Port?
    private var echo: (port: Port, release: () -> Void)?
    private let recorder: SampleRecorder

    init(label: String, transport: Port.Transport, iterations: Int, warmup: Int, timeout: Double,
         placement: Placement, pingMsgid: UInt32 = ChildRoles.Msgid.ping,
         spread: (() -> [Port])? = nil,
         makeEcho: @escaping () throws -> (port: Port, release: () -> Void)) {
        self.spread = spread
        self.pingMsgid = pingMsgid
        self.placement = placement
        self.label = label
        self.transport = transport
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.makeEcho = makeEcho
        recorder = SampleRecorder(capacity: iterations)
    }

    /// An echo on a LoopThread of this process: answers every message on
    /// its reply port with the same components.
    static func threadEcho(name: String, transport: Port.Transport, cpu: Int32) throws -> (port: Port, release: () -> Void) {
        let thread = LoopThread(name: name, scheduling: BenchLoopScheduling.chosen)
        try thread.start()
        if let tid = thread.threadID { Placement.pin(tid, to: cpu) }
        let port = try Port(transport: transport)
        port.setMessageHandler { message in
            // Never waits: one message is in flight at a time.
            try? message.replyPort?.send(msgid: ChildRoles.Msgid.pong, components: message.components, before: .distantFuture)
        }
        try port.schedule(in: thread.runLoop!, forMode: .default)
        return (port, {
            port.invalidate()
            thread.stop()
        })
    }

    func setUp() throws {
        let echo = try makeEcho()
        self.echo = echo
        let thread = LoopThread(name: "bench-ping", scheduling: BenchLoopScheduling.chosen)
        try thread.start()
        if let tid = thread.threadID { Placement.pin(tid, to: placement.first) }
        pingThread = thread
        let port = try Port(transport: transport)
        pingPort = port
        let recorder = self.recorder
        let destination = echo.port
        let msgid = pingMsgid
        if let spread {
            try port.schedule(in: thread.runLoop!, forMode: .default)
            return setSpreadingHandler(on: port, over: spread(), msgid: msgid)
        }
        // The handler holds the ping port weakly: tearDown's invalidate then
        // frees it.
        port.setMessageHandler { [weak port] message in
            let now = monotonicNanoseconds()
            guard recorder.record(now - recorder.mark) else {
                recorder.done.open()
                return
            }
            recorder.mark = monotonicNanoseconds()
            do {
                try destination.send(msgid: msgid, components: message.components, replyPort: port, before: .distantFuture)
            } catch {
                recorder.fail("ping send failed: \(error)")
            }
        }
        try port.schedule(in: thread.runLoop!, forMode: .default)
    }

    /// The handler of a spread ping-pong: each ping to the next port in
    /// turn (apart, so that the one-port rows' handler stays as it was).
    private func setSpreadingHandler(on port: Port, over destinations: [Port], msgid: UInt32) {
        let recorder = self.recorder
        let turn = Turn()
        port.setMessageHandler { [weak port] message in
            let now = monotonicNanoseconds()
            guard recorder.record(now - recorder.mark) else {
                recorder.done.open()
                return
            }
            recorder.mark = monotonicNanoseconds()
            do {
                try destinations[turn.next(destinations.count)].send(
                    msgid: msgid, components: message.components, replyPort: port, before: .distantFuture)
            } catch {
                recorder.fail("ping send failed: \(error)")
            }
        }
    }

    /// Placed as raw libzmq's round trips are: this process's libzmq I/O
    /// threads, which carry the pings to a child, with the ping thread.
    func measure() throws -> [Double] {
        try placement.whileRoundTripPlaced { try measurePlaced() }
    }

    private func measurePlaced() throws -> [Double] {
        guard let thread = pingThread, let port = pingPort, let destination = echo?.port else {
            throw BenchError("not set up")
        }
        recorder.reset(warmup: warmup, samples: iterations)
        let recorder = self.recorder
        let msgid = pingMsgid
        let payload: [PortMessage.Component] = [.data(Data(repeating: 0x2A, count: 64))]
        // The first ping leaves from the ping thread, like every later one.
        try thread.perform { [weak port] in
            recorder.mark = monotonicNanoseconds()
            do {
                try destination.send(msgid: msgid, components: payload, replyPort: port, before: .distantFuture)
            } catch {
                recorder.fail("first ping failed: \(error)")
            }
        }
        return try recorder.waitForSamples(seconds: timeout, what: "\(label) round trips")
    }

    func tearDown() {
        pingPort?.setMessageHandler(nil)
        pingPort?.invalidate()
        pingThread?.stop()
        echo?.release()
        pingPort = nil
        pingThread = nil
        echo = nil
    }
}
