import Dispatch
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
///
/// `fillsSendPool`: `setUp` first fills the send channel's pool of frame
/// buffers to its most (see `fillSendPool`), as the allocation workloads
/// need (Runner/Workload.swift).
final class PortFlood: Contender {
    let label: String
    private let count: Int
    private let timeout: Double
    private let placement: Placement
    private let inPlace: Bool
    private let fillsSendPool: Bool
    private var thread: LoopThread?
    private var port: Port?
    private let counter = ArrivalCounter()
    /// Where `fillSendPool` stops if the queue never fills (a failure: the
    /// port's queue holds about 2,000, ZMQ_SNDHWM + ZMQ_RCVHWM).
    private static let mostQueuedInPoolFill = 10_000

    init(label: String, count: Int, timeout: Double, placement: Placement, inPlace: Bool = false, fillsSendPool: Bool = false) {
        self.label = label
        self.count = count
        self.timeout = timeout
        self.placement = placement
        self.inPlace = inPlace
        self.fillsSendPool = fillsSendPool
    }

    func setUp() throws {
        let thread = try Placement.startedLoopThread("bench-sink", on: placement.second)
        self.thread = thread
        let port = try Port(transport: .inproc)
        // RLK_BENCH_BATCH=<n> measures another maxMessagesPerCallout (the
        // default's reason: docs/performance.md, "The port path").
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
        if fillsSendPool { try fillSendPool(port: port, thread: thread) }
    }

    /// Sends with the receiving loop held until the port's queue is full (a
    /// send that finds no room by now fails), then lets it all be delivered.
    ///
    /// The send channel sends from a pool of buffers that grows to the most
    /// messages ever in flight and is then used again and again. Left to the
    /// measured stream, that most is whatever the scheduler allows, and the
    /// buffers made would count as allocations per message, more in one run
    /// than the next. With the queue once full, no later send can find the
    /// pool short.
    private func fillSendPool(port: Port, thread: LoopThread) throws {
        let held = Gate()
        let release = DispatchSemaphore(value: 0)
        try thread.perform {
            held.open()
            release.wait()
        }
        do {
            try held.wait(seconds: timeout, for: "\(label): the receiving loop held")
        } catch {
            release.signal()  // the task, when it runs at last, must not hold the loop forever
            throw error
        }
        var queued = 0
        do {
            defer { release.signal() }
            let payload: [PortMessage.Component] = [.data(Data(repeating: 0x2A, count: 64))]
            let bytes: [UInt8] = Array(repeating: 0x2A, count: 64)
            while queued < Self.mostQueuedInPoolFill {
                do {
                    if inPlace {
                        try bytes.withUnsafeBytes { try port.send(msgid: 1, bytes: $0, before: Date()) }
                    } else {
                        try port.send(msgid: 1, components: payload, before: Date())
                    }
                } catch PortError.timedOut(_) {
                    break
                }
                queued += 1
            }
            counter.reset(expecting: queued)
        }
        guard queued > 0, queued < Self.mostQueuedInPoolFill else {
            throw BenchError("\(label): \(queued) messages fitted in the held port's queue (it holds about 2,000)")
        }
        try counter.done.wait(seconds: timeout, for: "\(label): the pool-filling \(queued) messages delivered (\(counter.received) so far)")
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
