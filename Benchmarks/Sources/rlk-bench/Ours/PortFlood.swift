import Glibc
import RunLoopKit

/// RunLoopKit's one-way throughput: the calling thread sends `count` 64-byte
/// PortMessages to one port as fast as `send` takes them (it waits for room
/// when the port's queue is full, never drops); the batch ends when the
/// receiving loop's handler has seen the last one. One sample per batch,
/// in messages per second.
///
/// `inPlace`: the same stream sent from bytes (`Port.send(msgid:bytes:…)`)
/// and read in place (`Port.setInPlaceMessageHandler`), no `Data` on either
/// side; the handler reads each payload's first and last byte, so that the
/// bytes are read as raw libzmq's receive copies them.
final class PortFlood: Contender {
    let label: String
    private let count: Int
    private let timeout: Double
    private let placement: Placement
    private let inPlace: Bool
    private var thread: LoopThread?
    private var port: Port?
    private let counter = ArrivalCounter()

    init(label: String, count: Int, timeout: Double, placement: Placement, inPlace: Bool = false) {
        self.label = label
        self.count = count
        self.timeout = timeout
        self.placement = placement
        self.inPlace = inPlace
    }

    func setUp() throws {
        let thread = try Placement.startedLoopThread("bench-sink", on: placement.second)
        self.thread = thread
        let port = try Port(transport: .inproc)
        // RLK_BENCH_BATCH=<n> measures another maxMessagesPerCallout (how the
        // default was chosen: docs/performance.md).
        if let batch = getenv("RLK_BENCH_BATCH").flatMap({ Int(String(cString: $0)) }) { port.maxMessagesPerCallout = batch }
        let counter = self.counter
        if inPlace {
            port.setInPlaceMessageHandler { message in
                let bytes = message.unsafeBytes(ofComponent: 0)
                if bytes.first == bytes.last { counter.arrive() } else { counter.arrive() }
            }
        } else {
            port.setMessageHandler { _ in counter.arrive() }
        }
        try port.schedule(on: thread, forMode: .default)
        self.port = port
    }

    func measure() throws -> [Double] {
        guard let port else { throw BenchError("not set up") }
        let elapsed = try Placement.whilePinned(to: placement.first) {
            try PortFlood.sendBatch(to: [port], count: count, counter: counter, timeout: timeout, what: label, fromBytes: inPlace)
        }
        return [Double(count) / (Double(elapsed) / 1e9)]
    }

    /// Sends `count` messages round-robin over `ports` from this thread and
    /// waits until `counter` has seen them all; returns the nanoseconds from
    /// the first send to the last arrival.
    static func sendBatch(
        to ports: [Port], count: Int, counter: ArrivalCounter, timeout: Double, what: String, fromBytes: Bool = false
    ) throws -> UInt64 {
        counter.reset(expecting: count)
        let payload: [PortMessage.Component] = [.data(Data(repeating: 0x2A, count: 64))]
        let deadline = Date() + timeout
        let start = monotonicNanoseconds()
        if fromBytes {
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64, alignment: 8)
            defer { buffer.deallocate() }
            buffer.initializeMemory(as: UInt8.self, repeating: 0x2A)
            let bytes = UnsafeRawBufferPointer(buffer)
            // One port, read out of the array once, as the Data stream below
            // does: indexing the array per message retained and released the
            // port (Swift's slow path for a Port), a cost of this loop, not of a send.
            precondition(ports.count == 1, "a stream sent from bytes goes to one port")
            let port = ports[0]
            for _ in 0..<count { try port.send(msgid: 1, bytes: bytes, before: deadline) }
        } else if ports.count == 1 {
            let port = ports[0]
            for _ in 0..<count { try port.send(msgid: 1, components: payload, before: deadline) }
        } else {
            var next = 0
            for _ in 0..<count {
                try ports[next].send(msgid: 1, components: payload, before: deadline)
                next += 1
                if next == ports.count { next = 0 }
            }
        }
        try counter.done.wait(seconds: timeout, for: "\(what): \(count) messages delivered (\(counter.received) so far)")
        return counter.lastArrival - start
    }

    func tearDown() {
        port?.setMessageHandler(nil)
        port?.invalidate()
        thread?.stop()
        port = nil
        thread = nil
    }
}
