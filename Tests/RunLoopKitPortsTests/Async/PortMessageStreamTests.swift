// A port's message stream with back-pressure: S-ASYNC-2. A flooded slow
// consumer holds its sender back (counted by sends and their timeouts, not
// by memory), and the messages a stream took in but never handed out go
// back to the port for its next handler or stream.
import Dispatch
import Glibc
import Testing
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("A port's message stream with back-pressure (S-ASYNC-2)", .blocksThreads)
struct PortMessageStreamTests {
    /// Waits, off the cooperative pool's threads, until `condition` or 30 s.
    private static func wait(for condition: () -> Bool) async throws {
        let limit = MonotonicClock.instant(secondsFromNow: 30)
        while !condition() && MonotonicClock.now() < limit { try await Task.sleep(for: .milliseconds(1)) }
    }

    /// Sends msgid `first`, `first + 1`, … from a Dispatch thread (not one
    /// of the cooperative pool, which the consumer needs), each
    /// with `deadline` seconds to find room, until one times out or `count`
    /// were sent. Returns how many were sent and the error that ended it.
    private static func flood(_ port: Port, from first: UInt32, count: Int, deadline: Double) async -> (sent: Int, error: PortError?) {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                var sent = 0
                var failure: PortError?
                do throws(PortError) {
                    while sent < count {
                        try port.send(msgid: first + UInt32(sent), components: [.data(Data(repeating: 7, count: 100))],
                                      before: Date() + deadline)
                        sent += 1
                    }
                } catch {
                    failure = error
                }
                continuation.resume(returning: (sent, failure))
            }
        }
    }

    @Test("S-ASYNC-2, S-PORT-4: a flooded consumer that reads nothing holds the sender back: sends time out once the stream's buffer and the port's queues are full, the buffer never passes its high watermark, and every message sent arrives in order once it reads")
    func floodedSlowConsumer() async throws {
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let buffering = PortMessageStream.Buffering(highWatermark: 50, lowWatermark: 10)
        let stream = try port.messages(buffering: buffering)
        // Nothing reads yet: the sender fills the stream's buffer, the
        // port's receive queue and its send queue, then times out.
        let (sent, error) = await Self.flood(port, from: 0, count: 100_000, deadline: 0.2)
        #expect(error?.caseName == "timedOut", "the flood ended with \(String(describing: error)) after \(sent) sends")
        let queues = Int(PortReceiver.highWaterMark + SendChannel.highWaterMark)
        #expect(sent >= buffering.highWatermark + queues / 2, "only \(sent) sends before the first timeout")
        #expect(sent <= buffering.highWatermark + queues + 200, "\(sent) sends before the first timeout: more than the buffer and the queues hold")
        #expect(stream.peakBufferedCount == buffering.highWatermark)

        // Now it reads, slowly at first, while more is sent: every message
        // arrives once and in order, and the buffer stays within its mark.
        let more = 3_000
        // Each send may wait as long as the consumer is kept from running
        // (the cooperative pool's threads are shared with the rest of the
        // suite): a generous deadline, a safety net, not what is tested.
        async let laterSends = Self.flood(port, from: UInt32(sent), count: more, deadline: 60)
        let consumer = Task { () -> (next: UInt32, outOfOrder: Int) in
            var next: UInt32 = 0
            var outOfOrder = 0
            for await message in stream {
                if message.msgid != next { outOfOrder += 1 }
                next = message.msgid + 1
                if next < 200 { try? await Task.sleep(for: .microseconds(200)) }
                if Int(next) == sent + more { break }
            }
            return (next, outOfOrder)
        }
        // A safety net, not a bound: a message that never comes fails the
        // test here instead of holding the suite forever.
        let watchdog = Task {
            try await Task.sleep(for: .seconds(120))
            consumer.cancel()
        }
        let (next, outOfOrder) = await consumer.value
        watchdog.cancel()
        let (laterSent, laterError) = await laterSends
        #expect(laterError == nil && laterSent == more, "the later flood sent \(laterSent) of \(more), ending with \(String(describing: laterError))")
        #expect(Int(next) == sent + more && outOfOrder == 0, "read up to msgid \(next) of \(sent + more), \(outOfOrder) out of order")
        #expect(stream.peakBufferedCount <= buffering.highWatermark)
    }

    /// What takes a port over after a stream: each must get first the
    /// messages the stream took in and never handed out.
    enum Successor: String, CaseIterable, CustomTestStringConvertible {
        case messageHandler, inPlaceHandler, anotherStream, streamDroppedUnused
        var testDescription: String { rawValue }
    }

    @Test("S-ASYNC-2: ending the iteration hands the port back: the messages the stream took in and never handed out go first, in order, to the port's next handler or stream (large ones, port components and reply ports included)", arguments: Successor.allCases)
    func unreadMessagesGoToTheNextHandler(successor: Successor) async throws {
        let port = try Port(transport: .inproc)
        let other = try Port(transport: .ipc)
        defer {
            port.invalidate()
            other.invalidate()
        }
        let buffering = PortMessageStream.Buffering(highWatermark: 20, lowWatermark: 5)
        // Every third message is over the pack limit (multipart on the wire),
        // and every message carries a port and a reply port.
        func send(_ msgid: UInt32) throws {
            let size = msgid % 3 == 0 ? 100_000 : 10
            try port.send(msgid: msgid, components: [.data(Data(repeating: UInt8(msgid & 0xFF), count: size)), .port(other)],
                          replyPort: other, before: portDeadline())
        }
        var handedOut: [UInt32] = []
        do {
            let stream = try port.messages(buffering: buffering)
            for msgid in UInt32(0)..<30 { try send(msgid) }
            // The stream takes 20 in, then stops the port: 10 wait there.
            try await Self.wait { stream.peakBufferedCount == 20 }
            #expect(stream.peakBufferedCount == 20)
            if successor != .streamDroppedUnused {
                for await message in stream {
                    handedOut.append(message.msgid)
                    if handedOut.count == 3 { break }
                }
            }
        }
        #expect(handedOut == (successor == .streamDroppedUnused ? [] : [0, 1, 2]))
        for msgid in UInt32(30)..<35 { try send(msgid) }

        // The successor: every message not handed out, in order, intact.
        let expected = Array(UInt32(handedOut.count)..<35)
        let received = Locked<[(msgid: UInt32, size: Int, byte: UInt8, port: Port?, reply: Port?)]>([])
        let (thread, loop) = try makePortLoopThread("stream-next")
        defer { thread.stop() }
        switch successor {
        case .messageHandler, .streamDroppedUnused:
            port.setMessageHandler { message in
                guard case let .data(data)? = message.components.first, case let .port(carried)? = message.components.last else { return }
                received.withLock { $0.append((message.msgid, data.count, data.first ?? 0, carried, message.replyPort)) }
            }
            try port.schedule(in: loop, forMode: .default)
        case .inPlaceHandler:
            port.setInPlaceMessageHandler { view in
                let bytes = view.unsafeBytes(ofComponent: 0)
                received.withLock { $0.append((view.msgid, bytes.count, bytes.first ?? 0, view.port(at: 1), view.replyPort)) }
            }
            try port.schedule(in: loop, forMode: .default)
        case .anotherStream:
            for await message in try port.messages(buffering: buffering) {
                guard case let .data(data)? = message.components.first, case let .port(carried)? = message.components.last else { continue }
                received.withLock { $0.append((message.msgid, data.count, data.first ?? 0, carried, message.replyPort)) }
                if received.value.count == expected.count { break }
            }
        }
        try await Self.wait { received.value.count >= expected.count }
        let got = received.value
        #expect(got.map(\.msgid) == expected)
        for message in got {
            #expect(message.size == (message.msgid % 3 == 0 ? 100_000 : 10) && message.byte == UInt8(message.msgid & 0xFF))
            #expect(message.port == other && message.reply == other)
        }
    }

    @Test("S-ASYNC-2: a port's message stream has one consumer: a second iterator traps, saying what to do")
    func secondIteratorTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let port = try Port(transport: .inproc)
            let stream = try port.messages()
            _ = stream.makeAsyncIterator()
            _ = stream.makeAsyncIterator()
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("A port's message stream has one consumer"), "\(stderr)")
    }

    @Test("S-ASYNC-2: buffering watermarks out of range are a programming error and trap")
    func watermarksOutOfRangeTrap() async {
        await #expect(processExitsWith: .failure) {
            _ = PortMessageStream.Buffering(highWatermark: 10, lowWatermark: 10)
        }
        await #expect(processExitsWith: .failure) {
            _ = PortMessageStream.Buffering(highWatermark: 0, lowWatermark: 0)
        }
    }
}
