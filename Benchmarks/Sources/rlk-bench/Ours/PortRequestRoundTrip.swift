import RunLoopKit

/// RunLoopKit's request round trip: the calling thread (a plain thread, not
/// a LoopThread) calls `port.sendRequest(msgid:components:sendTimeout:receiveTimeout:)`
/// with a 64-byte payload on a port scheduled on a LoopThread, whose handler
/// answers on `message.replyPort` with the same components. `sendRequest`
/// runs the calling thread's own loop in a private mode until the reply
/// arrives (CFMessagePortSendRequest). One sample per round trip, in µs.
///
/// Typed, the same round trip carries a `BenchRequest` (an id and the 64
/// bytes) through `sendRequest(_:as:)` and `setRequestHandler(for:)`, and
/// the handler answers a `BenchReply` of the same: what the coder adds.
final class PortRequestRoundTrip: Contender {
    struct BenchRequest: Codable, Sendable {
        var id: UInt64
        var body: Data
    }

    struct BenchReply: Codable, Sendable {
        var id: UInt64
        var body: Data
    }

    let label: String
    private let typed: Bool
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private var thread: LoopThread?
    private var port: Port?
    private var samples: [UInt64]

    init(iterations: Int, warmup: Int, timeout: Double, placement: Placement, typed: Bool = false) {
        self.typed = typed
        label = typed ? "RunLoopKit Port.sendRequest(_:as:), typed (a thread → a LoopThread's port)"
            : "RunLoopKit Port.sendRequest (a thread → a LoopThread's port)"
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
        if typed {
            port.setRequestHandler(for: BenchRequest.self) { request, _ in BenchReply(id: request.id, body: request.body) }
        } else {
            port.setMessageHandler { message in
                // Never waits: the asker waits for this reply, so its queue is empty.
                try? message.replyPort?.send(msgid: ChildRoles.Msgid.pong, components: message.components, before: .distantFuture)
            }
        }
        try port.schedule(on: thread, forMode: .default)
        self.port = port
    }

    func measure() throws -> [Double] {
        try Placement.whilePinned(to: placement.first) { try measurePinned() }
    }

    private func measurePinned() throws -> [Double] {
        guard let port else { throw BenchError("not set up") }
        if typed { return try measureTyped(port) }
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

    private func measureTyped(_ port: Port) throws -> [Double] {
        let body = Data(repeating: 0x2A, count: 64)
        for index in 0..<(warmup + iterations) {
            let start = monotonicNanoseconds()
            let reply = try port.sendRequest(BenchRequest(id: UInt64(index), body: body), msgid: ChildRoles.Msgid.ping,
                                             as: BenchReply.self, sendTimeout: timeout, receiveTimeout: timeout)
            let end = monotonicNanoseconds()
            guard reply.id == UInt64(index), reply.body.count == 64 else { throw BenchError("reply \(reply.id), not \(index)") }
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
