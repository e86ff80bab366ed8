import FoundationEssentials
import Glibc
import Synchronization
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// The network's pieces: a ZAP handler deciding who gets in, a socket
/// monitor reporting what happens to connections, the tcp options, and what
/// a received frame says of its connection. Over tcp loopback, each context
/// of its own (a context has one ZAP handler).
@Suite(.enabled(if: ZMQ.has("curve"), "libzmq without CURVE"), .serialized, .blocksThreads)
struct NetworkTests {
    /// A CURVE ROUTER behind a ZAP handler that lets in only `allowed` (and
    /// records who asked), and its monitor.
    final class Server {
        let context: ZMQContext
        let zap: ZAPHandler
        let router: Socket
        let monitor: SocketMonitor
        let keys: CurveKeyPair
        let endpoint: String
        let asked = AskedRequests()

        init(allowed: Set<CurveKey>) throws {
            context = try ZMQContext()
            keys = try CurveKeyPair.generate()
            let asked = self.asked
            zap = try ZAPHandler(context: context) { request in
                asked.requests.withLock { $0.append(request) }
                guard let key = request.clientKey, allowed.contains(key) else { return .deny(reason: "not listed") }
                return .allow(userID: key.z85)
            }
            router = try context.makeSocket(.router)
            try router.setCurveServer(keys)
            try router.setZAPDomain("test")
            try router.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
            monitor = try SocketMonitor(watching: router, in: context)
            try router.bind("tcp://127.0.0.1:*")
            endpoint = try #require(router.lastEndpoint)
        }

        func client(_ keys: CurveKeyPair?, serverKey: CurveKey? = nil) throws -> Socket {
            try client(keys, serverKey: serverKey, beforeConnecting: { _ in })
        }

        /// A client with a monitor of its own, watching before it connects:
        /// a monitor added after `connect` can miss the handshake's events.
        func monitoredClient(_ keys: CurveKeyPair?) throws -> (socket: Socket, monitor: SocketMonitor) {
            var monitor: SocketMonitor?
            let socket = try client(keys, serverKey: nil) { monitor = try SocketMonitor(watching: $0, in: self.context) }
            return (socket, monitor!)
        }

        private func client(_ keys: CurveKeyPair?, serverKey: CurveKey?, beforeConnecting: (Socket) throws -> Void) throws -> Socket {
            let dealer = try context.makeSocket(.dealer)
            if let keys { try dealer.setCurveClient(keys, serverKey: serverKey ?? self.keys.publicKey) }
            try dealer.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
            try beforeConnecting(dealer)
            try dealer.connect(endpoint)
            return dealer
        }

        /// The next event of `kind` within `seconds`.
        func waitFor(_ kind: SocketMonitor.Kind, seconds: Double = 10) throws -> SocketMonitor.Event? {
            try NetworkTests.waitFor(kind, on: monitor, seconds: seconds)
        }

        func close() {
            monitor.close()
            router.close()
            zap.close()
            context.terminate()
        }
    }

    static func waitFor(_ kind: SocketMonitor.Kind, on monitor: SocketMonitor, seconds: Double) throws -> SocketMonitor.Event? {
        let deadline = Date() + seconds
        while Date() < deadline {
            while let event = try monitor.next(dontWait: true) {
                if event.kind == kind { return event }
            }
            var poller = pollfd(fd: try monitor.fileDescriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, 20)
        }
        return nil
    }

    /// Receives one multipart message within the socket's receive timeout.
    static func receive(_ socket: Socket) throws -> [Data]? { try? socket.receiveMultipart() }

    @Test func aListedClientGetsInAndItsKeyAndAddressAreOnItsMessages() throws {
        let client = try CurveKeyPair.generate()
        let server = try Server(allowed: [client.publicKey])
        defer { server.close() }
        let dealer = try server.client(client)
        defer { dealer.close() }
        _ = try dealer.send(Data("hi".utf8))
        let routing = Message(), body = Message()
        #expect(try server.router.receive(into: routing))
        #expect(try server.router.receive(into: body))
        #expect(body.data == Data("hi".utf8))
        #expect(body.property("User-Id") == client.publicKey.z85)
        #expect(body.property("Peer-Address") == "127.0.0.1")
        let descriptor = try #require(body.sourceDescriptor)
        #expect(descriptor > 2)
        let request = try #require(server.asked.requests.withLock { $0.first })
        #expect(request.mechanism == "CURVE" && request.domain == "test" && request.address == "127.0.0.1")
        #expect(request.clientKey == client.publicKey)
        #expect(try server.waitFor(.accepted) != nil)
    }

    @Test func anUnlistedClientIsRefusedAndTheMonitorSaysWhy() throws {
        let server = try Server(allowed: [])
        defer { server.close() }
        let (stranger, strangerMonitor) = try server.monitoredClient(try CurveKeyPair.generate())
        defer { stranger.close() }
        defer { strangerMonitor.close() }
        _ = try stranger.send(Data("let me in".utf8), dontWait: true)
        #expect(try server.waitFor(.handshakeFailedAuth) != nil)
        #expect(try Self.waitFor(.handshakeFailedAuth, on: strangerMonitor, seconds: 10) != nil)
        try server.router.setReceiveTimeout(milliseconds: 300)
        #expect(try Self.receive(server.router) == nil)
    }

    @Test func aPlainClientIsRefusedByACurveServer() throws {
        let server = try Server(allowed: [])
        defer { server.close() }
        let plain = try server.client(nil)
        defer { plain.close() }
        _ = try plain.send(Data("plain".utf8), dontWait: true)
        #expect(try server.waitFor(.handshakeFailedProtocol) != nil)
        #expect(server.asked.requests.withLock { $0.isEmpty }, "the mechanisms differ: the handshake fails before ZAP is asked")
        try server.router.setReceiveTimeout(milliseconds: 300)
        #expect(try Self.receive(server.router) == nil)
    }

    @Test func aClosedHandlerFreesItsEndpointAndItsThread() throws {
        let context = try ZMQContext()
        defer { context.terminate() }
        // A name of its own: other tests' handlers may run in this process meanwhile.
        let name = "zap-close-test"
        #expect(Self.threads(named: name) == 0)
        let first = try ZAPHandler(context: context, threadName: name) { _ in .deny(reason: "no") }
        #expect(Self.eventually { Self.threads(named: name) == 1 })
        #expect(throws: ZMQError.self) { try ZAPHandler(context: context) { _ in .deny(reason: "no") } }
        first.close()
        first.close()  // idempotent
        #expect(Self.threads(named: name) == 0, "close() returns once the handler's thread has ended")
        let second = try ZAPHandler(context: context) { _ in .allow(userID: "") }
        second.close()
    }

    @Test func aHandshakeThatNeverFinishesEndsWithinTheHandshakeInterval() throws {
        // A raw tcp socket that connects and says nothing: the handshake
        // limit ends it, and the monitor reports it.
        let context = try ZMQContext()
        defer { context.terminate() }
        let router = try context.makeSocket(.router)
        defer { router.close() }
        try router.setHeartbeat(interval: .milliseconds(100), timeout: .milliseconds(300), ttl: .milliseconds(300))
        try router.setHandshakeInterval(.milliseconds(300))
        let monitor = try SocketMonitor(watching: router, in: context)
        defer { monitor.close() }
        try router.bind("tcp://127.0.0.1:*")
        let endpoint = try #require(router.lastEndpoint)
        let port = UInt16(endpoint.split(separator: ":").last!)!
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { Glibc.close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        #expect(connected == 0)
        #expect(try Self.waitFor(.accepted, on: monitor, seconds: 10) != nil)
        let ended = try Self.waitFor(.handshakeFailedNoDetail, on: monitor, seconds: 10)
        #expect(ended != nil)
    }

    @Test func optionsReadBack() throws {
        // Option numbers from zmq.h: this target sees only the Swift API.
        let heartbeatInterval: Int32 = 75, heartbeatTTL: Int32 = 76, heartbeatTimeout: Int32 = 77
        let ipv6: Int32 = 42, reconnectInterval: Int32 = 18, tcpKeepalive: Int32 = 34, handshakeInterval: Int32 = 66
        let socket = try ZMQContext.shared.makeSocket(.router)
        defer { socket.close() }
        try socket.setHeartbeat(interval: .milliseconds(250), timeout: .seconds(2), ttl: .milliseconds(3_050))
        #expect(try socket.int32Option(heartbeatInterval) == 250)
        #expect(try socket.int32Option(heartbeatTimeout) == 2000)
        #expect(try socket.int32Option(heartbeatTTL) == 3000, "libzmq keeps the TTL in tenths of a second")
        try socket.setIPv6(true)
        #expect(try socket.int32Option(ipv6) == 1)
        try socket.setReconnectInterval(nil)
        #expect(try socket.int32Option(reconnectInterval) == -1)
        try socket.setReconnectInterval(.milliseconds(40))
        #expect(try socket.int32Option(reconnectInterval) == 40)
        try socket.setTCPKeepalive(true)
        #expect(try socket.int32Option(tcpKeepalive) == 1)
        try socket.setHandshakeInterval(.seconds(3))
        #expect(try socket.int32Option(handshakeInterval) == 3000)
        try socket.setRouterMandatory(true)  // write-only in libzmq
        try socket.setZAPDomain("domain")
        #expect(throws: ZMQError.self) { try socket.setZAPDomain(String(repeating: "d", count: 300)) }
    }

    @Test func aMandatoryRouterRefusesAnUnknownPeer() throws {
        let socket = try ZMQContext.shared.makeSocket(.router)
        defer { socket.close() }
        try socket.setRouterMandatory(true)
        do {
            _ = try socket.send(Data("nobody".utf8), more: true, dontWait: true)
            Issue.record("a mandatory ROUTER took a message for an unknown peer")
        } catch {
            #expect(error.code == EHOSTUNREACH)
        }
    }

    /// Whether `condition` holds within 10 seconds, looked at every millisecond.
    static func eventually(_ condition: () -> Bool) -> Bool {
        for _ in 0..<10_000 {
            if condition() { return true }
            usleep(1000)
        }
        return condition()
    }

    /// Threads of this process named `name`.
    static func threads(named name: String) -> Int {
        let tasks = (try? FileManagerFree.entries("/proc/self/task")) ?? []
        return tasks.filter { task in
            guard let file = fopen("/proc/self/task/\(task)/comm", "r") else { return false }
            defer { fclose(file) }
            var buffer = [CChar](repeating: 0, count: 32)
            guard fgets(&buffer, 32, file) != nil else { return false }
            return String(cString: buffer) == name + "\n"
        }.count
    }
}

/// What a test's ZAP handler was asked.
final class AskedRequests: Sendable {
    let requests = Mutex<[ZAPHandler.Request]>([])
}

/// Directory entries without Foundation's FileManager.
enum FileManagerFree {
    static func entries(_ path: String) throws -> [String] {
        guard let directory = opendir(path) else { throw ZMQError(code: errno, operation: "opendir") }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafePointer(to: &entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
