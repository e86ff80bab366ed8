// Foundation's own run loop on its own thread, for the Foundation peers.
// This file imports Foundation and not RunLoopKit; `Foundation::` (SE-0491,
// README "Using RunLoopKit beside Foundation") says whose RunLoop, Thread and
// Timer are meant, so that the module's other files, which import
// RunLoopKit, can never be confused with these.
import CBenchPeers
import Foundation
import Glibc
import Synchronization

/// A Foundation `Thread` running Foundation's `RunLoop` until stopped.
///
/// Foundation's `RunLoop.perform` does not wake a sleeping loop on Linux
/// (README, "Why it exists"), and CFRunLoopStop is not exposed, so the
/// thread runs its loop in slices of `slice` seconds and checks a stop flag
/// between them. A slice ending is one wake-up: where wake-ups are counted
/// (the idle scenario) the slice is longer than the observation window.
final class FoundationLoopThread: @unchecked Sendable {
    // @unchecked Sendable: `tid` and `setUpError` are written once by the
    // thread before `ready` opens and read only after.
    private let stopFlag = Atomic<Bool>(false)
    private let ready = Gate()
    private let finished = Gate()
    private(set) var tid: Int32 = 0
    private var setUpError: String?

    /// Starts the thread; `setUp` runs on it (to make ports and timers in
    /// its run loop) before the loop starts. Waits until the loop is running.
    init(name: String, slice: TimeInterval, cpu: Int32 = -1,
         setUp: @escaping @Sendable (Foundation::RunLoop) throws -> Void,
         onExit: @escaping @Sendable () -> Void = {}) throws {
        let thread = Foundation::Thread { [self] in
            tid = bench_gettid()
            Placement.pin(0, to: cpu)
            let loop = Foundation::RunLoop.current
            do {
                try setUp(loop)
            } catch {
                setUpError = "\(error)"
            }
            ready.open()
            if setUpError == nil {
                while !stopFlag.load(ordering: .acquiring) {
                    _ = loop.run(mode: .default, before: Date(timeIntervalSinceNow: slice))
                }
            }
            onExit()
            finished.open()
        }
        thread.name = name
        thread.start()
        try ready.wait(seconds: 10, for: "Foundation thread '\(name)' to start")
        if let setUpError { throw BenchError("Foundation thread '\(name)': \(setUpError)") }
    }

    /// Asks the loop to stop and waits up to `seconds` (one slice) for it.
    /// Returns false if the thread did not stop in time.
    @discardableResult
    func stop(within seconds: Double) -> Bool {
        stopFlag.store(true, ordering: .releasing)
        return (try? finished.wait(seconds: seconds, for: "a Foundation thread to stop")) != nil
    }
}

/// A listening SocketPort on 127.0.0.1 with a port number the kernel picks
/// (`SocketPort(tcpPort:)` would listen on every interface).
func loopbackSocketPort() -> Foundation::SocketPort? {
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian  // 127.0.0.1
    let data = withUnsafeBytes(of: address) { Data($0) }
    return Foundation::SocketPort(protocolFamily: PF_INET, socketType: Int32(SOCK_STREAM.rawValue),
                                  protocol: Int32(IPPROTO_TCP), address: data)
}
