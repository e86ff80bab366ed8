import Glibc
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The loop thread on which async requests and message sequences receive.
enum AsyncPorts {
    /// The thread, made on first use.
    private static let thread = Locked<LoopThread?>(nil)

    static func loop() throws(PortError) -> RunLoop {
        try thread.withLock { (thread) throws(PortError) -> RunLoop in
            if let loop = thread?.runLoop { return loop }
            let made = LoopThread(name: "rlk-async-ports")
            do throws(RunLoopError) { try made.start() } catch { throw .runLoop(error) }
            thread = made
            return made.runLoop!
        }
    }
}
