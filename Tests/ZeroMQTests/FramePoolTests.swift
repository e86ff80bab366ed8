import Dispatch
import FoundationEssentials
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// FramePool: frames sent from buffers used again once libzmq lets them go.
@Suite(.blocksThreads) struct FramePoolTests {
    /// Sends one frame of `size` bytes, each `fill`, from `pool`.
    private func send(size: Int, fill: UInt8, from pool: FramePool, on socket: Socket, dontWait: Bool = false) throws -> Bool {
        try socket.send(byteCount: size, from: pool, dontWait: dontWait) { $0.initializeMemory(as: UInt8.self, repeating: fill) }
    }

    /// Receives one frame into `message` and checks it is `size` bytes of `fill`.
    private func expectFrame(_ socket: Socket, into message: Message, size: Int, fill: UInt8,
                             sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try socket.receive(into: message), sourceLocation: sourceLocation)
        #expect(message.count == size, sourceLocation: sourceLocation)
        let intact = message.withUnsafeBytes { $0.allSatisfy { $0 == fill } }
        #expect(intact, "a frame of \(size) bytes of \(fill)", sourceLocation: sourceLocation)
    }

    @Test func framesArriveIntactAndTheSameFewBuffersGoRound() throws {
        let (pull, push) = try connectedSockets(.pull, .push, label: "pool-reuse")
        defer { pull.close(); push.close() }
        let pool = FramePool(bufferBytes: 128, maxBuffers: 64)
        let message = Message()
        for round in 0..<100 {
            for index in 0..<8 { #expect(try send(size: 100, fill: UInt8(truncatingIfNeeded: round * 8 + index), from: pool, on: push)) }
            for index in 0..<8 { try expectFrame(pull, into: message, size: 100, fill: UInt8(truncatingIfNeeded: round * 8 + index)) }
        }
        // 800 frames, never more than 8 in flight and the last one held by
        // `message`: without reuse the pool would have run out at 64.
        #expect((1...9).contains(pool.bufferCount))
    }

    @Test func framesLibzmqKeepsInlineTakeNoBuffer() throws {
        let (pull, push) = try connectedSockets(.pull, .push, label: "pool-inline")
        defer { pull.close(); push.close() }
        let pool = FramePool(bufferBytes: 64, maxBuffers: 8)
        for size in [0, 1, 33] { #expect(try send(size: size, fill: 5, from: pool, on: push)) }
        #expect(pool.bufferCount == 0, "frames of up to 33 bytes live in the zmq_msg_t itself")
        #expect(try send(size: 34, fill: 6, from: pool, on: push))
        #expect(pool.bufferCount == 1)
        let message = Message()
        for size in [0, 1, 33] { try expectFrame(pull, into: message, size: size, fill: 5) }
        try expectFrame(pull, into: message, size: 34, fill: 6)
    }

    @Test func largerFramesAndFramesPastTheLimitAreAllocatedAsWithoutAPool() throws {
        let (pull, push) = try connectedSockets(.pull, .push, label: "pool-limits")
        defer { pull.close(); push.close() }
        let pool = FramePool(bufferBytes: 64, maxBuffers: 2)
        for fill: UInt8 in 1...3 { #expect(try send(size: 64, fill: fill, from: pool, on: push)) }
        #expect(pool.bufferCount == 2, "the third frame, with both buffers in flight, was allocated by libzmq")
        #expect(try send(size: 65, fill: 4, from: pool, on: push))
        #expect(pool.bufferCount == 2, "a frame over bufferBytes takes no buffer")
        let message = Message()
        for fill: UInt8 in 1...3 { try expectFrame(pull, into: message, size: 64, fill: fill) }
        try expectFrame(pull, into: message, size: 65, fill: 4)
    }

    @Test func aFrameWrittenUpToACapacityGoesAsLongAsItsWriterSays() throws {
        let (pull, push) = try connectedSockets(.pull, .push, label: "pool-up-to")
        defer { pull.close(); push.close() }
        let pool = FramePool(bufferBytes: 128, maxBuffers: 1)
        func send(capacity: Int, size: Int, fill: UInt8) throws {
            let sent = try push.send(upTo: capacity, from: pool) { buffer in
                #expect(buffer.count == capacity)
                buffer.initializeMemory(as: UInt8.self, repeating: fill)
                return size
            }
            #expect(sent)
        }
        // Over the pool's buffers: in buffers of their own, whatever size they end at.
        try send(capacity: 129, size: 129, fill: 2)
        try send(capacity: 300, size: 0, fill: 3)
        #expect(pool.bufferCount == 0)
        try send(capacity: 128, size: 50, fill: 1)
        #expect(pool.bufferCount == 1, "a capacity the pool's buffers hold takes one")
        let message = Message()
        for (size, fill) in [(129, UInt8(2)), (0, 3), (50, 1)] { try expectFrame(pull, into: message, size: size, fill: fill) }
    }

    @Test func closingWithFramesInFlightFreesTheirBuffersAsLibzmqLetsThemGo() throws {
        let (pull, push) = try connectedSockets(.pull, .push, label: "pool-close")
        defer { pull.close(); push.close() }
        let pool = FramePool(bufferBytes: 40, maxBuffers: 4)
        for fill: UInt8 in 1...4 { #expect(try send(size: 40, fill: fill, from: pool, on: push)) }
        pool.close()
        pool.close()  // idempotent
        #expect(pool.bufferCount == 4, "all four are in flight: none is freed yet")
        let message = Message()
        for fill: UInt8 in 1...4 {
            try expectFrame(pull, into: message, size: 40, fill: fill)
            // Receiving frame n let frame n - 1 go.
            #expect(pool.bufferCount == 5 - Int(fill))
        }
        message.reset()
        #expect(pool.bufferCount == 0)
        // Closed: a send allocates as without a pool.
        #expect(try send(size: 40, fill: 9, from: pool, on: push))
        #expect(pool.bufferCount == 0)
        try expectFrame(pull, into: message, size: 40, fill: 9)
    }

    @Test func aSendThatFindsNoRoomGivesItsBufferBack() throws {
        let endpoint = uniqueInprocEndpoint("pool-full")
        let pull = try ZMQContext.shared.makeSocket(.pull)
        let push = try ZMQContext.shared.makeSocket(.push)
        defer { pull.close(); push.close() }
        try pull.setReceiveHighWaterMark(1)
        try push.setSendHighWaterMark(1)
        try pull.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
        try pull.bind(endpoint)
        try push.connect(endpoint)
        let pool = FramePool(bufferBytes: 48, maxBuffers: 100)
        var sent = 0
        while try send(size: 48, fill: UInt8(sent + 1), from: pool, on: push, dontWait: true) {
            sent += 1
            try #require(sent < 100, "the queue never filled")
        }
        #expect(pool.bufferCount == sent + 1, "the refused frame's buffer went back to the pool, ready")
        #expect(try !send(size: 48, fill: 0, from: pool, on: push, dontWait: true))
        #expect(pool.bufferCount == sent + 1, "the next attempt took the same buffer")
        let message = Message()
        for fill in 1...sent { try expectFrame(pull, into: message, size: 48, fill: UInt8(fill)) }
    }

    @Test func buffersComeBackFromTheReceivingThread() throws {
        let (pull, push) = try connectedSockets(.pull, .push, label: "pool-threads")
        defer { push.close() }
        pull.releaseOwnership()
        let count = 20_000
        let pool = FramePool(bufferBytes: 64, maxBuffers: 256)
        let received = DispatchSemaphore(value: 0)
        final class Count: @unchecked Sendable { var value = 0 }  // the receiving thread's until `received`
        let intact = Count()
        DispatchQueue.global().async {
            let message = Message()
            for index in 0..<count {
                guard (try? pull.receive(into: message)) == true else { break }
                let fill = UInt8(truncatingIfNeeded: index)
                if message.count == 64 && message.withUnsafeBytes({ $0.allSatisfy { $0 == fill } }) { intact.value += 1 }
            }
            message.reset()
            pull.close()
            received.signal()
        }
        for index in 0..<count { #expect(try send(size: 64, fill: UInt8(truncatingIfNeeded: index), from: pool, on: push)) }
        #expect(received.wait(timeout: .now() + .seconds(30)) == .success)
        #expect(intact.value == count)
        #expect(pool.bufferCount <= 256)
        pool.close()
        #expect(pool.bufferCount == 0, "every buffer came back and was freed")
    }
}
