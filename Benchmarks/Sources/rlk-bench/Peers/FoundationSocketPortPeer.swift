// Foundation's SocketPort, the only Port that works in Foundation on Linux
// (README, "Why it exists"). Imports Foundation and not RunLoopKit; see
// FoundationThread.swift.
import Foundation
import Glibc
import Synchronization

/// Foundation's round trip between two threads: each runs Foundation's
/// RunLoop with a SocketPort (TCP on loopback) scheduled in it; A sends a
/// 64-byte data component to B, B's delegate sends it back to A, A's
/// delegate records the round trip and sends the next.
///
/// On Linux a received PortMessage's sendPort is not the sender's port (the
/// header carries the destination's own address), so each side replies to
/// the other's port by its known TCP port number. Optional: if SocketPort
/// fails or hangs here, the row says "unavailable" instead of failing the run.
final class SocketPortPingPong: Contender {
    let label = "Foundation SocketPort (TCP loopback)"
    var optional: Bool { true }
    private let iterations: Int
    private let warmup: Int
    private let timeout: Double
    private let placement: Placement
    private let recorder: SampleRecorder
    private var threads: [FoundationLoopThread] = []
    private let a = Endpoint()
    private let b = Endpoint()
    private var remoteB: Foundation::SocketPort?

    /// One side's port, its TCP port number, and its delegate (which
    /// SocketPort holds weakly, so it lives here).
    final class Endpoint: NSObject, Foundation::PortDelegate, @unchecked Sendable {
        // @unchecked Sendable: set before the loops run, then used only on the side's thread.
        var port: Foundation::SocketPort?
        var number: UInt16 = 0
        var onMessage: ((Foundation::PortMessage) -> Void)?
        func handle(_ message: Foundation::PortMessage) { onMessage?(message) }
    }

    init(iterations: Int, warmup: Int, timeout: Double, placement: Placement) {
        self.iterations = iterations
        self.warmup = warmup
        self.timeout = timeout
        self.placement = placement
        recorder = SampleRecorder(capacity: iterations)
    }

    func setUp() throws {
        for (name, endpoint, cpu) in [("bench-sp-a", a, placement.first), ("bench-sp-b", b, placement.second)] {
            threads.append(try FoundationLoopThread(name: name, slice: 0.05, cpu: cpu) { loop in
                guard let port = loopbackSocketPort() else { throw BenchError("SocketPort on 127.0.0.1 could not be made") }
                port.setDelegate(endpoint)
                port.schedule(in: loop, forMode: .default)
                endpoint.port = port
                endpoint.number = try SocketPortPingPong.boundPort(port.socket)
            })
        }
        guard let toA = Foundation::SocketPort(remoteWithTCPPort: a.number, host: "127.0.0.1"),
              let toB = Foundation::SocketPort(remoteWithTCPPort: b.number, host: "127.0.0.1") else {
            throw BenchError("SocketPort(remoteWithTCPPort:) returned nil")
        }
        remoteB = toB
        let recorder = self.recorder
        b.onMessage = { message in
            _ = toA.send(before: Date(timeIntervalSinceNow: 5), msgid: 2,
                         components: NSMutableArray(array: message.components ?? []), from: nil, reserved: 0)
        }
        a.onMessage = { message in
            guard recorder.record(monotonicNanoseconds() - recorder.mark) else {
                recorder.done.open()
                return
            }
            recorder.mark = monotonicNanoseconds()
            if !toB.send(before: Date(timeIntervalSinceNow: 5), msgid: 1,
                         components: NSMutableArray(array: message.components ?? []), from: nil, reserved: 0) {
                recorder.fail("SocketPort send failed")
            }
        }
    }

    func measure() throws -> [Double] {
        guard let remoteB else { throw BenchError("not set up") }
        recorder.reset(warmup: warmup, samples: iterations)
        // The first ping leaves from this thread (Foundation's perform would
        // not wake A's loop); every later one from A's delegate.
        recorder.mark = monotonicNanoseconds()
        let payload = NSMutableArray(array: [Data(repeating: 0x2A, count: 64)])
        guard remoteB.send(before: Date(timeIntervalSinceNow: 5), msgid: 1, components: payload, from: nil, reserved: 0) else {
            throw BenchError("SocketPort: the first send failed")
        }
        return try recorder.waitForSamples(seconds: timeout, what: "SocketPort round trips")
    }

    func tearDown() {
        a.onMessage = nil
        b.onMessage = nil
        for thread in threads { thread.stop(within: 2) }
        // Invalidate from here once the loops are done: SocketPort's sockets close.
        a.port?.invalidate()
        b.port?.invalidate()
        remoteB?.invalidate()
        threads = []
        remoteB = nil
    }

    /// The TCP port a listening socket was bound to (it asked for port 0).
    static func boundPort(_ socket: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let rc = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) }
        }
        guard rc == 0 else { throw BenchError("getsockname failed: \(String(cString: strerror(errno)))") }
        return UInt16(bigEndian: address.sin_port)
    }
}
