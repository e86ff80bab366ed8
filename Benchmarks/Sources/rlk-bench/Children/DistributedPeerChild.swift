import RunLoopKit
import RunLoopKitDistributed

/// The `dist-peer` child: RunLoopKit's callee of distributed-call-processes
/// in the other process. A PortActorSystem over ipc, a `PortEchoActor`
/// pinned to a LoopThread of its own and registered under the name it was
/// given, served until the parent calls `finish()`, or until a minute
/// passes without a call (the parent is stuck; a dead parent kills it at
/// once through PR_SET_PDEATHSIG), as the rlk-peer child does.
enum DistributedPeerChild {
    /// Without a call for this long, the child exits.
    static let idleLimitSeconds = 60.0

    /// The watchdog's last look: the count then, and when it last grew.
    /// @unchecked Sendable: read and written by the main thread's timer only.
    final class LastLook: @unchecked Sendable {
        var count: UInt64 = 0
        var activity = monotonicNanoseconds()
    }

    static func serve(name: String) -> Int32 {
        let loop = RunLoop.current
        let system: PortActorSystem
        let worker = LoopThread(name: "bench-dist-actor")
        var actor: PortEchoActor?
        do {
            system = try PortActorSystem(transport: .ipc, name: "bench-dist-peer")
        } catch {
            FileHandleOut.error("dist-peer: set-up failed: \(error)")
            return 1
        }
        defer {
            system.shutdown()
            worker.stop()
        }
        let tally = EchoTally { loop.stop() }
        let last = LastLook()
        do {
            try worker.start()
            let made = PortEchoActor(worker: worker, tally: tally, actorSystem: system)
            actor = made
            try system.register(made, name: name)
            // Checks every 5 s; the wake-up costs the measurements nothing visible.
            let watchdog = try Timer(timeInterval: 5, repeats: true) { _ in
                let count = tally.answered
                if count != last.count {
                    last.count = count
                    last.activity = monotonicNanoseconds()
                } else if secondsSince(last.activity) > idleLimitSeconds {
                    FileHandleOut.error("dist-peer: no call for \(Int(idleLimitSeconds)) s; exiting")
                    loop.stop()
                }
            }
            loop.add(watchdog, forMode: .default)
        } catch {
            FileHandleOut.error("dist-peer: set-up failed: \(error)")
            return 1
        }
        loop.runUntilStopped()
        withExtendedLifetime(actor) {}
        actor = nil
        return 0
    }
}
