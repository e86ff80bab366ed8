import FoundationEssentials
import Glibc
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// ZMQContext and ZMQ: the process context, its socket limit, and library facts.
@Suite(.blocksThreads) struct ContextTests {
    @Test func sharedContextAllowsFarMoreThanLibzmqsDefault() {
        // libzmq's default is 1023; min(65_536, ZMQ_SOCKET_LIMIT) is 65_535 with epoll.
        #expect(ZMQContext.shared.maxSockets > 1_023)
        #expect(ZMQContext.shared.maxSockets <= 65_536)
        #expect(ZMQContext.shared === ZMQContext.shared)
    }

    @Test func elevenHundredSocketsOpenOnTheSharedContext() throws {
        ensureFileDescriptorLimit(atLeast: 4_096)
        var sockets: [Socket] = []
        defer { sockets.forEach { $0.close() } }
        for _ in 0..<1_100 {
            sockets.append(try ZMQContext.shared.makeSocket(.pair))
        }
        #expect(sockets.count == 1_100)
        // The last one is a working socket, not just a handle.
        let (a, b) = (sockets[1_098], sockets[1_099])
        let endpoint = uniqueInprocEndpoint("many")
        try a.bind(endpoint)
        try b.connect(endpoint)
        try b.send("1100th")
        let message = Message()
        #expect(try a.receive(into: message, dontWait: true))
        #expect(message.string == "1100th")
    }

    @Test func aSmallLimitFailsTheNextSocketWithTooManyFiles() throws {
        let context = try ZMQContext(maxSockets: 3)
        #expect(context.maxSockets == 3)
        let sockets = try (0..<3).map { _ in try context.makeSocket(.pair) }
        let error = #expect(throws: ZMQError.self) { try context.makeSocket(.push) }
        #expect(error == ZMQError(code: EMFILE, operation: "zmq_socket(push)"))
        #expect(sockets.allSatisfy { !$0.isClosed })
    }

    @Test func aLimitAboveLibzmqsCeilingIsClamped() throws {
        let context = try ZMQContext(maxSockets: .max)
        #expect(context.maxSockets > 1_023)
        #expect(context.maxSockets < .max)
    }

    @Test func aNonPositiveLimitIsInvalid() {
        let error = #expect(throws: ZMQError.self) { try ZMQContext(maxSockets: 0) }
        #expect(error?.code == EINVAL)
        #expect(error?.operation == "zmq_ctx_set(ZMQ_MAX_SOCKETS, 0)")
    }

    @Test func privateContextTerminatesWithUnsentMessagesQueued() throws {
        // Messages queued for a peer that never comes would hold zmq_ctx_term up forever
        // with an infinite linger; makeSocket's linger 0 and ZMQ_BLOCKY 0 prevent that.
        // If they did not, this test would never return.
        var context: ZMQContext? = try ZMQContext()
        var push: Socket? = try context!.makeSocket(.push)
        try push!.connect("tcp://127.0.0.1:1")  // nobody listens on port 1
        #expect(try push!.send("queued", dontWait: true), "queued in the pipe while connecting")
        #expect(try push!.linger == 0)
        context = nil  // the socket still holds the context
        push = nil  // closes the socket, then terminates the context
        #expect(push == nil && context == nil)
    }

    @Test func socketsKeepTheirContextAlive() throws {
        weak var weakContext: ZMQContext?
        var socket: Socket?
        do {
            let context = try ZMQContext()
            weakContext = context
            socket = try context.makeSocket(.pair)
        }
        #expect(weakContext != nil, "the socket holds its context")
        try socket?.bind(uniqueInprocEndpoint("alive"))
        socket = nil
        #expect(weakContext == nil, "the context goes with its last socket")
    }

    @Test func versionAndCapabilities() {
        let version = ZMQ.version
        #expect(version.major == 4)
        #expect(version.minor >= 3)
        #expect(ZMQ.has("ipc"))
        #expect(!ZMQ.has("no-such-capability"))
    }
}
