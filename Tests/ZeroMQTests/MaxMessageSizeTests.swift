import FoundationEssentials
import Glibc
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// ZMQ_MAXMSGSIZE: a peer announcing an oversized message is cut off before the message
/// is read; the receiving socket keeps working.
///
/// The misbehaving peer is a raw TCP client speaking ZMTP 3.0 by hand, so the test can
/// see the connection being dropped (end of stream) instead of guessing with a delay.
@Suite(.blocksThreads) struct MaxMessageSizeTests {
    static let limit = 1_024

    /// ZMTP 3.0 greeting for the NULL mechanism and a READY command saying "I am a PUSH".
    static let handshake: [UInt8] = {
        var bytes: [UInt8] = [0xFF, 0, 0, 0, 0, 0, 0, 0, 1, 0x7F, 3, 0]  // signature, version 3.0
        bytes += Array("NULL".utf8) + [UInt8](repeating: 0, count: 16)  // mechanism, 20 bytes
        bytes += [0] + [UInt8](repeating: 0, count: 31)  // as-server, filler
        let property = [UInt8(11)] + Array("Socket-Type".utf8) + [0, 0, 0, 4] + Array("PUSH".utf8)
        let ready = [UInt8(5)] + Array("READY".utf8) + property
        bytes += [0x04, UInt8(ready.count)] + ready  // short command frame
        return bytes
    }()

    /// The header of a single-frame message of `size` bytes (long form).
    static func messageHeader(announcing size: UInt64) -> [UInt8] {
        [0x02] + (0..<8).map { UInt8(truncatingIfNeeded: size >> (8 * (7 - $0))) }
    }

    /// Reads exactly `count` bytes; nil on end of stream, error or hang guard.
    static func readExactly(_ fd: Int32, _ count: Int) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + done, count - done) }
            if n > 0 { done += n } else if n < 0, errno == EINTR { continue } else { return nil }
        }
        return buffer
    }

    /// Sends our greeting and READY, then reads libzmq's greeting and READY command: libzmq
    /// treats a message that arrives before it has sent its own READY as a protocol error.
    static func handshake(_ fd: Int32) -> Bool {
        guard handshake.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) == handshake.count,
            let greeting = readExactly(fd, 64), greeting[0] == 0xFF, greeting[10] == 3,
            let command = readExactly(fd, 2), command[0] == 0x04,
            let ready = readExactly(fd, Int(command[1]))
        else { return false }
        return ready.starts(with: [5] + Array("READY".utf8))
    }

    /// Writes all of `bytes`.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
    }

    /// Connects a raw TCP socket to 127.0.0.1:port with a receive timeout as hang guard.
    static func rawConnect(port: UInt16) -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        precondition(fd >= 0)
        var timeout = timeval(tv_sec: Int(hangGuardMilliseconds / 1_000), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        precondition(rc == 0, "connect failed: errno \(errno)")
        return fd
    }

    /// Reads and discards until the peer closes; true on end of stream or reset, false
    /// when the hang guard expired first.
    static func readUntilClosed(_ fd: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n > 0 { continue }
            if n == 0 { return true }
            if errno == EINTR { continue }
            return errno == ECONNRESET
        }
    }

    @Test func oversizedMessageIsDroppedWithItsConnectionAndTheReceiverStaysUsable() throws {
        let receiver = try ZMQContext.shared.makeSocket(.pull)
        try receiver.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
        try receiver.setMaxMessageSize(Int64(Self.limit))
        try receiver.bind("tcp://127.0.0.1:*")
        let endpoint = try #require(receiver.lastEndpoint)
        let port = try #require(UInt16(endpoint.split(separator: ":").last ?? ""))

        let raw = Self.rawConnect(port: port)
        defer { Glibc.close(raw) }
        try #require(Self.handshake(raw))
        #expect(Self.writeAll(raw, Self.messageHeader(announcing: UInt64(Self.limit + 1))))
        #expect(Self.readUntilClosed(raw), "libzmq drops a peer that announces an oversized message")
        #expect(try !receiver.receive(into: Message(), dontWait: true), "the oversized message never arrives")

        // A well-behaved peer still gets through, with a message exactly at the limit.
        let sender = try ZMQContext.shared.makeSocket(.push)
        defer { sender.close() }
        try sender.connect(endpoint)
        try sender.send(Data(repeating: 0x5A, count: Self.limit))
        let message = Message()
        #expect(try receiver.receive(into: message))
        #expect(message.count == Self.limit)
        #expect(message.data == Data(repeating: 0x5A, count: Self.limit))
    }

    @Test func handcraftedPeerIsAcceptedWhenWithinTheLimit() throws {
        // Proves the hand-made peer speaks valid ZMTP, so the drop in the other test is
        // the size check and not a protocol error.
        let receiver = try ZMQContext.shared.makeSocket(.pull)
        try receiver.setReceiveTimeout(milliseconds: hangGuardMilliseconds)
        try receiver.setMaxMessageSize(Int64(Self.limit))
        try receiver.bind("tcp://127.0.0.1:*")
        let endpoint = try #require(receiver.lastEndpoint)
        let port = try #require(UInt16(endpoint.split(separator: ":").last ?? ""))

        let raw = Self.rawConnect(port: port)
        defer { Glibc.close(raw) }
        let body = [UInt8](repeating: 0x33, count: Self.limit)
        try #require(Self.handshake(raw))
        #expect(Self.writeAll(raw, Self.messageHeader(announcing: UInt64(body.count)) + body))
        let message = Message()
        #expect(try receiver.receive(into: message))
        #expect(message.data == Data(body))
    }
}
