// A tcp relay on loopback that records every byte it passes, both ways:
// what a capture of a connection's traffic would show.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

final class TCPRelay: @unchecked Sendable {
    // @unchecked Sendable: `bytes` behind its lock; the fds are closed once.
    let port: UInt16
    private let listener: Int32
    private let target: UInt16
    private let bytes = Locked<[UInt8]>([])
    private let thread: SpawnedThread<Void>?

    init(to target: UInt16) throws {
        self.target = target
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = Self.loopback(port: 0)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(socket, 4) == 0 else { throw TestFailure("relay: bind or listen failed: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        listener = socket
        port = UInt16(bigEndian: address.sin_port)
        let bytes = self.bytes
        thread = SpawnedThread(named: "rlkt-relay") {
            // One connection at a time, relayed until either side closes.
            while true {
                let client = accept(socket, nil, nil)
                guard client >= 0 else { return }
                let server = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
                var destination = TCPRelay.loopback(port: target)
                let connected = withUnsafePointer(to: &destination) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(server, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
                if connected == 0 { TCPRelay.pump(client, server, into: bytes) }
                Glibc.close(client)
                Glibc.close(server)
            }
        }
    }

    static func loopback(port: UInt16) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }

    /// Copies both ways until one side ends, keeping what passed.
    private static func pump(_ a: Int32, _ b: Int32, into bytes: Locked<[UInt8]>) {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var fds = [pollfd(fd: a, events: Int16(POLLIN), revents: 0), pollfd(fd: b, events: Int16(POLLIN), revents: 0)]
        while poll(&fds, 2, 10_000) > 0 {
            for (index, entry) in fds.enumerated() where entry.revents != 0 {
                let count = read(entry.fd, &buffer, buffer.count)
                if count <= 0 { return }
                bytes.withLock { $0 += buffer[..<count] }
                let other = index == 0 ? b : a
                var written = 0
                while written < count {
                    let step = buffer[written..<count].withUnsafeBytes { write(other, $0.baseAddress, $0.count) }
                    if step <= 0 { return }
                    written += step
                }
            }
            for index in fds.indices { fds[index].revents = 0 }
        }
    }

    func captured() -> [UInt8] { bytes.withLock { $0 } }

    func close() {
        shutdown(listener, Int32(SHUT_RDWR))
        Glibc.close(listener)
        _ = try? thread?.join(timeout: 30)
    }
}
