import FoundationEssentials
import Glibc
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// Sockets: endpoints, sending and receiving single and multipart messages, non-blocking
/// behaviour, timeouts, closing.
@Suite(.blocksThreads) struct SocketTests {
    @Test func pairRoundTripsASingleFrameBothWays() throws {
        let (a, b) = try connectedSockets(.pair, .pair, label: "pair-single")
        defer { a.close(); b.close() }
        let message = Message()
        #expect(try b.send("ping"))
        #expect(try a.receive(into: message))
        #expect(message.string == "ping")
        #expect(!message.hasMore)
        #expect(try !a.hasMoreFrames)

        let bytes: [UInt8] = [0, 1, 2, 255]
        #expect(try bytes.withUnsafeBytes { try a.send($0) })
        #expect(try b.receive(into: message))
        #expect(message.data == Data(bytes))
    }

    @Test func pairRoundTripsMultipartMessages() throws {
        let (a, b) = try connectedSockets(.pair, .pair, label: "pair-multipart")
        defer { a.close(); b.close() }
        let frames = [Data("header".utf8), Data(), Data(repeating: 0xAB, count: 100_000), Data("tail".utf8)]
        #expect(try a.sendMultipart(frames))
        #expect(try a.sendMultipart([Data("second".utf8)]))
        #expect(try b.receiveMultipart() == frames)
        #expect(try b.receiveMultipart() == [Data("second".utf8)])

        // Frame by frame, with `more`, arrives as the same multipart message.
        try b.send(Data("x".utf8), more: true)
        try b.send("y", more: true)
        try b.send(Data("z".utf8))
        #expect(try a.receiveMultipart() == [Data("x".utf8), Data("y".utf8), Data("z".utf8)])
    }

    @Test func sendingNoFramesIsInvalid() throws {
        let (a, b) = try connectedSockets(.pair, .pair, label: "empty-multipart")
        defer { a.close(); b.close() }
        let error = #expect(throws: ZMQError.self) { try a.sendMultipart([]) }
        #expect(error?.code == EINVAL)
        #expect(try b.receiveMultipart(dontWait: true) == nil, "nothing was sent")
    }

    @Test func stringsAreSentAsUTF8WithoutTerminator() throws {
        let (a, b) = try connectedSockets(.pair, .pair, label: "utf8")
        defer { a.close(); b.close() }
        try a.send("héllo ✓")
        let message = Message()
        #expect(try b.receive(into: message))
        #expect(message.data == Data("héllo ✓".utf8))
        #expect(message.count == "héllo ✓".utf8.count)
    }

    @Test func pushPullKeepsOrderAndFairQueuesSenders() throws {
        let (pull, push) = try connectedSockets(.pull, .push, label: "pipeline")
        defer { pull.close(); push.close() }
        let second = try ZMQContext.shared.makeSocket(.push)
        defer { second.close() }
        try second.connect(try #require(pull.lastEndpoint))
        for i in 0..<100 { try push.send("first \(i)") }
        for i in 0..<100 { try second.send("second \(i)") }

        let message = Message()
        var first: [String] = []
        var other: [String] = []
        for _ in 0..<200 {
            #expect(try pull.receive(into: message))
            let text = message.string
            if text.hasPrefix("first") { first.append(text) } else { other.append(text) }
        }
        #expect(first == (0..<100).map { "first \($0)" })
        #expect(other == (0..<100).map { "second \($0)" })
        #expect(try !pull.receive(into: message, dontWait: true))
    }

    @Test func receivingWithoutWaitingOnAnEmptySocketReturnsFalseOrNil() throws {
        let (a, b) = try connectedSockets(.pair, .pair, label: "empty-receive")
        defer { a.close(); b.close() }
        let message = Message()
        try a.send("earlier")
        #expect(try b.receive(into: message))
        #expect(message.string == "earlier")
        #expect(try !b.receive(into: message, dontWait: true))
        #expect(message.count == 0, "libzmq releases the old content even when nothing arrives")
        #expect(try b.receiveMultipart(dontWait: true) == nil)
    }

    @Test func sendingWithoutWaitingWithNoPeerReturnsFalse() throws {
        let push = try ZMQContext.shared.makeSocket(.push)
        #expect(try !push.send("nobody", dontWait: true))
        #expect(try !push.sendMultipart([Data("a".utf8), Data("b".utf8)], dontWait: true))
    }

    @Test func sendingWithoutWaitingStopsAtTheHighWaterMarkAndLosesNothing() throws {
        let endpoint = uniqueInprocEndpoint("hwm")
        let pull = try ZMQContext.shared.makeSocket(.pull)
        let push = try ZMQContext.shared.makeSocket(.push)
        defer { pull.close(); push.close() }
        try pull.setReceiveHighWaterMark(1)
        try push.setSendHighWaterMark(1)
        try pull.bind(endpoint)
        try push.connect(endpoint)

        var accepted = 0
        while accepted < 1_000, try push.sendMultipart([Data("m".utf8), Data("\(accepted)".utf8)], dontWait: true) {
            accepted += 1
        }
        #expect(accepted >= 1)
        #expect(accepted < 10, "an inproc pipe holds about SNDHWM + RCVHWM messages")
        #expect(try !push.send("more", dontWait: true))

        for i in 0..<accepted {
            #expect(try pull.receiveMultipart(dontWait: true) == [Data("m".utf8), Data("\(i)".utf8)])
        }
        #expect(try pull.receiveMultipart(dontWait: true) == nil)
    }

    @Test func blockingReceiveTimesOutWithWouldBlock() throws {
        let (a, b) = try connectedSockets(.pair, .pair, label: "rcvtimeo")
        defer { a.close(); b.close() }
        try a.setReceiveTimeout(milliseconds: 20)
        let error = #expect(throws: ZMQError.self) { try a.receive(into: Message()) }
        #expect(error?.isWouldBlock == true)
        #expect(error?.operation == "zmq_msg_recv")
    }

    @Test func blockingSendTimesOutWithWouldBlock() throws {
        let push = try ZMQContext.shared.makeSocket(.push)
        try push.setSendTimeout(milliseconds: 20)
        let error = #expect(throws: ZMQError.self) { try push.send("nobody") }
        #expect(error?.isWouldBlock == true)
        #expect(error?.operation == "zmq_send")
    }

    @Test func closeIsIdempotentAndLaterOperationsThrowNotASocket() throws {
        let (a, b) = try connectedSockets(.pair, .pair, label: "close")
        defer { a.close(); b.close() }
        #expect(!a.isClosed)
        a.close()
        a.close()
        #expect(a.isClosed)
        #expect(a.lastEndpoint == nil)

        let notASocket = ENOTSOCK
        #expect(throws: ZMQError(code: notASocket, operation: "zmq_send")) { try a.send("x") }
        #expect(throws: ZMQError(code: notASocket, operation: "zmq_msg_recv")) { try a.receive(into: Message(), dontWait: true) }
        #expect(throws: ZMQError(code: notASocket, operation: "zmq_msg_recv")) { try a.receiveMultipart() }
        #expect(throws: ZMQError(code: notASocket, operation: "zmq_bind(inproc://x)")) { try a.bind("inproc://x") }
        #expect(throws: ZMQError(code: notASocket, operation: "zmq_connect(inproc://x)")) { try a.connect("inproc://x") }
        #expect(throws: ZMQError(code: notASocket, operation: "zmq_getsockopt(ZMQ_LINGER)")) { try a.linger }
        #expect(throws: ZMQError(code: notASocket, operation: "zmq_setsockopt(ZMQ_SNDHWM)")) { try a.setSendHighWaterMark(1) }
        #expect(throws: ZMQError(code: notASocket, operation: "zmq_getsockopt(ZMQ_EVENTS)")) { try a.events }

        // The peer lives on.
        try b.send("still here", dontWait: true)
    }

    @Test func ipcEndpointsInATemporaryDirectoryWork() throws {
        let directory = makeTemporaryDirectory()
        defer { removeTemporaryDirectory(directory) }
        let endpoint = "ipc://\(directory)/port"
        let server = try ZMQContext.shared.makeSocket(.pair)
        let client = try ZMQContext.shared.makeSocket(.pair)
        defer { server.close(); client.close() }
        try server.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
        try client.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
        try server.bind(endpoint)
        #expect(server.lastEndpoint == endpoint)
        #expect(access("\(directory)/port", F_OK) == 0, "binding creates the socket file")
        try client.connect(endpoint)

        try client.sendMultipart([Data("over".utf8), Data("ipc".utf8)])
        #expect(try server.receiveMultipart() == [Data("over".utf8), Data("ipc".utf8)])
        try server.send("back")
        let message = Message()
        #expect(try client.receive(into: message))
        #expect(message.string == "back")

        try server.unbind(endpoint)
        #expect(server.lastEndpoint == endpoint, "lastEndpoint reports the last bind, not the current state")
    }

    @Test func tcpWildcardPortResolvesInLastEndpointAndUnbinds() throws {
        let socket = try ZMQContext.shared.makeSocket(.pull)
        try socket.bind("tcp://127.0.0.1:*")
        let endpoint = try #require(socket.lastEndpoint)
        #expect(endpoint.hasPrefix("tcp://127.0.0.1:"))
        #expect(Int(endpoint.dropFirst("tcp://127.0.0.1:".count)).map { $0 > 0 } == true)
        try socket.unbind(endpoint)
        let error = #expect(throws: ZMQError.self) { try socket.unbind(endpoint) }
        #expect(error?.code == ENOENT)
    }

    @Test func disconnectDropsAConnectionAndRejectsUnknownEndpoints() throws {
        let (server, client) = try connectedSockets(.pull, .push, label: "disconnect")
        defer { server.close(); client.close() }
        let endpoint = try #require(client.lastEndpoint)
        try client.disconnect(endpoint)
        #expect(try !client.send("gone", dontWait: true), "no peer is left to queue for")
        let error = #expect(throws: ZMQError.self) { try client.disconnect(endpoint) }
        #expect(error?.code == ENOENT)
        #expect(error?.operation == "zmq_disconnect(\(endpoint))")
    }

    @Test(arguments: SocketType.allCases)
    func socketTypeRawValuesAreLibzmqConstants(type: SocketType) throws {
        let socket = try ZMQContext.shared.makeSocket(type)
        #expect(socket.type == type)
        let zmqType: Int32 = 16  // ZMQ_TYPE
        #expect(try socket.int32Option(zmqType) == type.rawValue)
    }

    @Test func optionsReadBackWhatWasSet() throws {
        let socket = try ZMQContext.shared.makeSocket(.dealer)
        #expect(try socket.linger == 0, "makeSocket sets linger 0")
        try socket.setLinger(milliseconds: 250)
        #expect(try socket.linger == 250)
        try socket.setSendHighWaterMark(7)
        #expect(try socket.int32Option(23) == 7)  // ZMQ_SNDHWM
        try socket.setReceiveHighWaterMark(9)
        #expect(try socket.int32Option(24) == 9)  // ZMQ_RCVHWM
        try socket.setMaxMessageSize(1_234)
        #expect(try socket.int64Option(22) == 1_234)  // ZMQ_MAXMSGSIZE
        try socket.setOption(22, Int64(-1))
        #expect(try socket.int64Option(22) == -1)
        try socket.setSendTimeout(milliseconds: 30)
        #expect(try socket.int32Option(28) == 30)  // ZMQ_SNDTIMEO
        try socket.setReceiveTimeout(milliseconds: 40)
        #expect(try socket.int32Option(27) == 40)  // ZMQ_RCVTIMEO
        try socket.setImmediate(true)
        #expect(try socket.int32Option(39) == 1)  // ZMQ_IMMEDIATE
        try socket.setOption(17, Int32(5))  // ZMQ_LINGER
        #expect(try socket.linger == 5)
        try Array("id".utf8).withUnsafeBytes { try socket.setOption(5, bytes: $0) }  // ZMQ_ROUTING_ID
    }

    @Test func routerAddressesDealersByRoutingID() throws {
        let endpoint = uniqueInprocEndpoint("router")
        let router = try ZMQContext.shared.makeSocket(.router)
        let named = try ZMQContext.shared.makeSocket(.dealer)
        defer { router.close(); named.close() }
        try router.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
        try named.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
        try router.bind(endpoint)
        // The routing id must be set before connecting.
        try named.setRoutingID(Data("worker-1".utf8))
        try named.connect(endpoint)

        try named.send("hello")
        #expect(try router.receiveMultipart() == [Data("worker-1".utf8), Data("hello".utf8)])
        try router.sendMultipart([Data("worker-1".utf8), Data("reply".utf8)])
        #expect(try named.receiveMultipart() == [Data("reply".utf8)])
    }

    @Test func subscribersGetOnlyMatchingTopics() throws {
        // XPUB, unlike PUB, receives the subscription, which tells the test when it has
        // arrived: what is published before that would be lost.
        let (publisher, subscriber) = try connectedSockets(.xpub, .sub, label: "pubsub")
        defer { publisher.close(); subscriber.close() }
        try subscriber.subscribe(Data("topic".utf8))
        #expect(try publisher.receiveMultipart() == [Data([1]) + Data("topic".utf8)])

        try publisher.send("topic.a")
        try publisher.send("other")
        try publisher.sendMultipart([Data("topic.b".utf8), Data("body".utf8)])
        #expect(try subscriber.receiveMultipart() == [Data("topic.a".utf8)])
        #expect(try subscriber.receiveMultipart() == [Data("topic.b".utf8), Data("body".utf8)])
        #expect(try subscriber.receiveMultipart(dontWait: true) == nil)
    }
}
