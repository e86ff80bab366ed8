// An idle Foundation RunLoop, for the idle scenario. Imports Foundation and
// not RunLoopKit; see FoundationThread.swift.
import Foundation

/// A Foundation thread whose RunLoop holds a SocketPort and a timer an hour
/// away, and otherwise has nothing to do: the Foundation way to keep a
/// thread's loop alive (NSMachPort is unavailable on Linux).
///
/// Its loop runs one slice longer than the observation window, so the slice
/// itself never wakes it inside the window; to stop it, `stop` sends a
/// message to its port, which ends the slice.
final class FoundationIdleLoop {
    private var thread: FoundationLoopThread?
    private let portBox = PortBox()

    final class PortBox: @unchecked Sendable {
        // @unchecked Sendable: set on the Foundation thread before it reports ready.
        var port: Foundation::SocketPort?
        var number: UInt16 = 0
        var timer: Foundation::Timer?
        let delegate = Sink()
    }

    final class Sink: NSObject, Foundation::PortDelegate, @unchecked Sendable {
        func handle(_ message: Foundation::PortMessage) {}
    }

    /// The thread id of the loop's thread, for CPU time and context switches.
    var tid: Int32 { thread?.tid ?? 0 }

    init(window: Double) throws {
        let box = portBox
        thread = try FoundationLoopThread(name: "bench-fidle", slice: window + 30) { loop in
            guard let port = loopbackSocketPort() else { throw BenchError("SocketPort on 127.0.0.1 could not be made") }
            port.setDelegate(box.delegate)
            port.schedule(in: loop, forMode: .default)
            box.port = port
            box.number = try SocketPortPingPong.boundPort(port.socket)
            let timer = Foundation::Timer(timeInterval: 3600, repeats: false) { _ in }
            loop.add(timer, forMode: .default)
            box.timer = timer
        }
    }

    func stop() {
        portBox.timer?.invalidate()
        if let remote = Foundation::SocketPort(remoteWithTCPPort: portBox.number, host: "127.0.0.1") {
            _ = remote.send(before: Date(timeIntervalSinceNow: 1), msgid: 1,
                            components: NSMutableArray(array: [Data(count: 8)]), from: nil, reserved: 0)
            thread?.stop(within: 3)
            remote.invalidate()
        }
        portBox.port?.invalidate()
        thread = nil
    }
}
