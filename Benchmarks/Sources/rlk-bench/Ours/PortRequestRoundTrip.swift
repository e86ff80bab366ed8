import RunLoopKit

/// RunLoopKit's request round trip: the calling thread (a plain thread, not
/// a LoopThread) calls `port.sendRequest(msgid:components:sendTimeout:receiveTimeout:)`
/// with a 64-byte payload on a port scheduled on a LoopThread, whose handler
/// answers on `message.replyPort` with the same components. `sendRequest`
/// runs the calling thread's own loop in a private mode until the reply
/// arrives (CFMessagePortSendRequest). One sample per round trip, in µs.
final class PortRequestRoundTrip: Contender {
    let label = "RunLoopKit Port.sendRequest (a thread → a LoopThread's port)"
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private var thread: LoopThread?
    private var port: Port?
    private var samples: [UInt64]

    init(iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.placement = placement
        samples = Array(repeating: 0, count: iterations)
    }

    func setUp() throws {
        let thread = try Placement.startedLoopThread("bench-server", on: placement.second)
        self.thread = thread
        let port = try Port(transport: .inproc)
        port.setMessageHandler { message in
            // Never waits: the asker waits for this reply, so its queue is empty.
            try? message.replyPort?.send(msgid: ChildRoles.Msgid.pong, components: message.components, before: .distantFuture)
        }
        try port.schedule(on: thread, forMode: .default)
        self.port = port
    }

    func measure() throws -> [Double] {
        try Placement.whilePinned(to: placement.first) { try measurePinned() }
    }

    private func measurePinned() throws -> [Double] {
        guard let port else { throw BenchError("not set up") }
        let payload: [PortMessage.Component] = [.data(Data(repeating: 0x2A, count: 64))]
        for index in 0..<(warmup + iterations) {
            let start = monotonicNanoseconds()
            let reply = try port.sendRequest(msgid: ChildRoles.Msgid.ping, components: payload,
                                             sendTimeout: timeout, receiveTimeout: timeout)
            let end = monotonicNanoseconds()
            guard reply.msgid == ChildRoles.Msgid.pong else { throw BenchError("reply \(reply.msgid), not \(ChildRoles.Msgid.pong)") }
            if index >= warmup { samples[index - warmup] = end - start }
        }
        return samples.map { Double($0) / 1000 }
    }

    func tearDown() {
        port?.setMessageHandler(nil)
        port?.invalidate()
        thread?.stop()
        port = nil
        thread = nil
    }
}
