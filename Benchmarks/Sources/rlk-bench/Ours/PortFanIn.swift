import RunLoopKit

/// RunLoopKit's fan-in: `senders` plain threads each send their share of
/// `count` 64-byte PortMessages to ONE port scheduled on a LoopThread, all
/// at once (`port.send(msgid:components:before:)`, which waits for room and
/// never drops); the batch ends when the loop's handler has seen the last
/// one. One sample per batch, in messages per second. Measured like
/// `PortFlood`, with the senders made once, in set-up.
final class PortFanIn: Contender {
    let label: String
    private let senders: Int
    private let count: Int
    private let timeout: Double
    private let placement: Placement
    private var thread: LoopThread?
    private var port: Port?
    private var senderThreads: SenderThreads?
    private let counter = ArrivalCounter()

    /// `count` must be a multiple of `senders`.
    init(label: String, senders: Int, count: Int, timeout: Double, placement: Placement) {
        precondition(count % senders == 0, "fan-in: \(count) messages do not split among \(senders) senders")
        self.label = label
        self.senders = senders
        self.count = count
        self.timeout = timeout
        self.placement = placement
    }

    func setUp() throws {
        let thread = try Placement.startedLoopThread("bench-fanin-sink", on: placement.second)
        self.thread = thread
        let port = try Port(transport: .inproc)
        let counter = self.counter
        port.setMessageHandler { _ in counter.arrive() }
        try port.schedule(on: thread, forMode: .default)
        self.port = port
        let threads = SenderThreads(count: senders, cpu: placement.first)
        try threads.start()
        senderThreads = threads
    }

    func measure() throws -> [Double] {
        guard let port, let senderThreads else { throw BenchError("not set up") }
        counter.reset(expecting: count)
        let share = count / senders
        let deadline = Date() + timeout
        let start = try senderThreads.run(timeout: timeout) { _ in
            let payload: [PortMessage.Component] = [.data(Data(repeating: 0x2A, count: 64))]
            for _ in 0..<share { try port.send(msgid: 1, components: payload, before: deadline) }
        }
        try counter.done.wait(seconds: timeout, for: "\(label): \(count) messages delivered (\(counter.received) so far)")
        return [Double(count) / (Double(counter.lastArrival - start) / 1e9)]
    }

    func tearDown() {
        senderThreads?.stop()
        senderThreads = nil
        port?.setMessageHandler(nil)
        port?.invalidate()
        thread?.stop()
        port = nil
        thread = nil
    }
}
