import FoundationEssentials
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// Message: a reusable zmq_msg_t.
@Suite(.blocksThreads) struct MessageTests {
    @Test func newMessageIsEmpty() {
        let message = Message()
        #expect(message.count == 0)
        #expect(!message.hasMore)
        #expect(message.data.isEmpty)
        #expect(message.withUnsafeBytes { $0.count } == 0)
    }

    @Test func initWithBytesCopies() {
        var source: [UInt8] = Array("copied".utf8)
        let message = source.withUnsafeBytes { Message(bytes: $0) }
        source[0] = UInt8(ascii: "X")
        #expect(message.count == 6)
        #expect(message.data == Data("copied".utf8))
        let large = [UInt8](repeating: 9, count: 70_000)
        #expect(large.withUnsafeBytes { Message(bytes: $0) }.data == Data(large))
    }

    @Test func withUnsafeBytesPassesResultsAndErrorsThrough() {
        struct Stop: Error {}
        let message = Array("abc".utf8).withUnsafeBytes { Message(bytes: $0) }
        let sum = message.withUnsafeBytes { bytes -> Int in bytes.reduce(0) { $0 + Int($1) } }
        #expect(sum == 97 + 98 + 99)
        #expect(throws: Stop.self) { try message.withUnsafeBytes { _ in throw Stop() } }
    }

    @Test func oneMessageReceivesManyFramesOfAllSizes() throws {
        let (a, b) = try connectedSockets(.pair, .pair, label: "reuse")
        defer { a.close(); b.close() }
        // Sizes around libzmq's inline limit (33 bytes) and well beyond it.
        let sizes = [0, 1, 32, 33, 34, 1_000, 100_000, 5, 0, 64]
        let message = Message()
        for round in 0..<50 {
            for (index, size) in sizes.enumerated() {
                let fill = UInt8(truncatingIfNeeded: round &+ index)
                try a.send(Data(repeating: fill, count: size))
                #expect(try b.receive(into: message))
                #expect(message.count == size)
                let intact = message.withUnsafeBytes { bytes in bytes.allSatisfy { $0 == fill } }
                #expect(intact, "round \(round), size \(size)")
            }
        }
    }

    @Test func hasMoreFollowsTheFramesOfAMultipartMessage() throws {
        let (a, b) = try connectedSockets(.pair, .pair, label: "more")
        defer { a.close(); b.close() }
        try a.sendMultipart([Data("1".utf8), Data("2".utf8), Data("3".utf8)])
        let message = Message()
        var seen: [(String, Bool, Bool)] = []
        repeat {
            #expect(try b.receive(into: message))
            seen.append((message.string, message.hasMore, try b.hasMoreFrames))
        } while message.hasMore
        #expect(seen.map(\.0) == ["1", "2", "3"])
        #expect(seen.map(\.1) == [true, true, false])
        #expect(seen.map(\.2) == [true, true, false], "ZMQ_RCVMORE agrees with zmq_msg_more")
    }
}
