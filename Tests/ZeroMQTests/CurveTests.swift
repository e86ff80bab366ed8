import FoundationEssentials
import Glibc
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// CURVE: keys and their Z85 form, and a CURVE connection over tcp loopback
/// that a client with the server's key makes and one with another key does not.
@Suite(.enabled(if: ZMQ.has("curve"), "libzmq without CURVE"), .blocksThreads)
struct CurveTests {
    @Test func aKeyPairHas32ByteKeysWhoseZ85TextRoundTrips() throws {
        let pair = try CurveKeyPair.generate()
        #expect(pair.publicKey.bytes.count == 32 && pair.secretKey.bytes.count == 32)
        #expect(pair.publicKey != pair.secretKey)
        #expect(pair.publicKey.z85.utf8.count == 40)
        #expect(try CurveKey(z85: pair.secretKey.z85) == pair.secretKey)
        #expect(try CurveKey(bytes: pair.publicKey.bytes) == pair.publicKey)
        // The public key follows from the secret one.
        #expect(try CurveKeyPair(secretKey: pair.secretKey) == pair)
        // Two pairs differ.
        #expect(try CurveKeyPair.generate().secretKey != pair.secretKey)
        // A printed key shows only its start.
        #expect(String(describing: pair.secretKey) == "CurveKey(\(pair.secretKey.z85.prefix(8))…)")
    }

    @Test func aKnownKeyDecodesToItsBytes() throws {
        // libzmq's own test server key, and its bytes as Z85 (ZeroMQ RFC 32) gives them.
        let key = try CurveKey(z85: "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")
        let hex = key.bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        #expect(hex == "54fcba24e93249969316fb617c872bb0c1d1ff14800427c594cbfacf1bc2d652")
        #expect(key.z85 == "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7")
    }

    @Test(arguments: ["", "short", String(repeating: "a", count: 39), String(repeating: "a", count: 41), String(repeating: "a", count: 39) + "~", String(repeating: "a", count: 39) + "\""])
    func badZ85TextIsATypedError(_ text: String) {
        #expect(throws: ZMQError.self) { try CurveKey(z85: text) }
    }

    @Test func aKeyOfAnotherLengthIsATypedError() {
        #expect(throws: ZMQError.self) { try CurveKey(bytes: [UInt8](repeating: 1, count: 31)) }
    }

    /// A CURVE server PAIR bound on tcp loopback (an ephemeral port) and a
    /// client that expects `serverKey`.
    static func curvePair(clientExpects serverKey: (CurveKeyPair) -> CurveKey) throws -> (server: Socket, client: Socket) {
        let serverKeys = try CurveKeyPair.generate(), clientKeys = try CurveKeyPair.generate()
        let server = try ZMQContext.shared.makeSocket(.pair), client = try ZMQContext.shared.makeSocket(.pair)
        try server.setCurveServer(serverKeys)
        try server.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
        try server.bind("tcp://127.0.0.1:*")
        try client.setCurveClient(clientKeys, serverKey: serverKey(serverKeys))
        try client.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
        guard let endpoint = server.lastEndpoint else { throw ZMQError(code: EINVAL, operation: "no ZMQ_LAST_ENDPOINT after bind") }
        try client.connect(endpoint)
        return (server, client)
    }

    @Test func aClientWithTheServersKeyTalksOverCurve() throws {
        let (server, client) = try Self.curvePair { $0.publicKey }
        defer { server.close(); client.close() }
        #expect(try server.mechanism == .curve && client.mechanism == .curve)
        #expect(try client.send("over curve"))
        let message = Message()
        #expect(try server.receive(into: message))
        #expect(message.string == "over curve")
        #expect(try server.send("back"))
        #expect(try client.receive(into: message))
        #expect(message.string == "back")
    }

    @Test func aClientExpectingAnotherServerKeyGetsNothingThrough() throws {
        let stranger = try CurveKeyPair.generate()
        let (server, client) = try Self.curvePair { _ in stranger.publicKey }
        defer { server.close(); client.close() }
        // The handshake fails, so the message waits in the client and never
        // reaches the server: the receive gives up after its bound.
        try server.setReceiveTimeout(milliseconds: 1_000)
        _ = try client.send("must not arrive", dontWait: true)
        let message = Message()
        do {
            _ = try server.receive(into: message)
            Issue.record("a message crossed a failed handshake: \(message.string)")
        } catch {
            #expect(error.isWouldBlock, "\(error)")
        }
    }
}
