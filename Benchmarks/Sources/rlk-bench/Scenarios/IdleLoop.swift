import Glibc
import RunLoopKit

/// docs/performance.md ("Targets"): an idle loop with ports and a far timer makes 0 wake-ups and
/// uses 0 CPU over 10 s. A Foundation thread kept alive the Foundation way
/// (a SocketPort and a far timer in its RunLoop) is watched over the same
/// window, for comparison.
///
/// Wake-ups are counted by the kernel (voluntary context switches of the
/// loop's thread: each sleep that ended is one) for both sides, and by
/// RunLoopKit itself (`passesCompleted`) for ours. CPU time is the thread's
/// own clock. All are read from outside, without waking the thread.
struct IdleLoop: Scenario {
    let name = "idle"
    let summary = "wake-ups and CPU of an idle LoopThread with ports and a far timer vs an idle Foundation RunLoop thread"

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let window = config.idleSeconds
        let windowNote = config.quick ? "over \(format(window)) s (--quick; the full run watches 10 s)" : "over \(format(window)) s"
        var oursWakeups = Measurement(label: "RunLoopKit LoopThread (10 ports, timer in 1 h)", samples: [], better: .lower)
        var oursCPU = oursWakeups
        var peerWakeups = Measurement(label: "Foundation RunLoop thread (SocketPort, timer in 1 h)", samples: [],
                                      better: .lower, optional: true)
        var peerCPU = peerWakeups
        var notes = [windowNote]

        // Ours: 8 inproc and 2 ipc ports, and a timer an hour away.
        let thread = LoopThread(name: "bench-idle")
        var ports: [Port] = []
        var timer: RunLoopKit.Timer?
        var foundation: FoundationIdleLoop?
        do {
            try thread.start()
            guard let loop = thread.runLoop, let tid = thread.threadID else { throw BenchError("LoopThread has no loop") }
            for index in 0..<10 {
                let port = try Port(transport: index < 8 ? .inproc : .ipc)
                port.setMessageHandler { _ in }
                try port.schedule(in: loop, forMode: .default)
                ports.append(port)
            }
            let far = try RunLoopKit.Timer(timeInterval: 3600, repeats: false) { _ in }
            loop.add(far, forMode: .default)
            timer = far
            do {
                foundation = try FoundationIdleLoop(window: window)
            } catch {
                peerWakeups.error = "\(error)"
                peerCPU.error = "\(error)"
            }
            // Let both settle: adding from this thread woke ours a few times.
            usleep(300_000)

            let peerTid = foundation?.tid ?? 0
            let passes0 = loop.passesCompleted
            let switches0 = ProcessStats.voluntarySwitches(tid)
            let cpu0 = ProcessStats.threadCPUNanoseconds(tid)
            let peerSwitches0 = peerTid > 0 ? ProcessStats.voluntarySwitches(peerTid) : nil
            let peerCPU0 = peerTid > 0 ? ProcessStats.threadCPUNanoseconds(peerTid) : nil
            usleep(UInt32(window * 1e6))
            let passes = loop.passesCompleted - passes0
            if let switches0, let switches = ProcessStats.voluntarySwitches(tid),
               let cpu0, let cpu = ProcessStats.threadCPUNanoseconds(tid) {
                oursWakeups.samples = [Double(switches - switches0)]
                oursCPU.samples = [Double(cpu - cpu0) / 1000]
            } else {
                throw BenchError("cannot read the loop thread's CPU time or context switches from /proc")
            }
            notes.append("RunLoopKit passesCompleted grew by \(passes) (0 expected)")
            if let peerSwitches0, let peerCPU0, let switches = ProcessStats.voluntarySwitches(peerTid),
               let cpu = ProcessStats.threadCPUNanoseconds(peerTid) {
                peerWakeups.samples = [Double(switches - peerSwitches0)]
                peerCPU.samples = [Double(cpu - peerCPU0) / 1000]
            } else if peerWakeups.error == nil {
                peerWakeups.error = "cannot read the Foundation thread's counters"
                peerCPU.error = peerWakeups.error
            }
            let passesOK = passes == 0
            let wakeTarget = Target(text: "0 wake-ups (and 0 passes)", standing: .guarded) { result in
                result.ours.summary.map { $0.max == 0 && passesOK }
            }
            let cpuTarget = Target(text: "0 µs CPU", standing: .guarded) { result in result.ours.summary.map { $0.max == 0 } }
            foundation?.stop()
            for port in ports { port.invalidate() }
            timer?.invalidate()
            thread.stop()
            return [
                ScenarioResult(name: "idle-wakeups", title: "idle loop with ports and a far timer: wake-ups \(windowNote)",
                               unit: "wake-ups", better: .lower, ours: oursWakeups, peer: peerWakeups,
                               target: wakeTarget, notes: notes + ["wake-ups = the thread's voluntary context switches (kernel count), both sides"]),
                ScenarioResult(name: "idle-cpu", title: "idle loop with ports and a far timer: thread CPU time \(windowNote)",
                               unit: "µs CPU", better: .lower, ours: oursCPU, peer: peerCPU, target: cpuTarget,
                               notes: ["thread CPU clock of the loop's thread (clock_gettime on its per-thread clock id)"]),
            ]
        } catch {
            foundation?.stop()
            for port in ports { port.invalidate() }
            timer?.invalidate()
            thread.stop()
            oursWakeups.error = "\(error)"
            oursCPU.error = "\(error)"
            return [
                ScenarioResult(name: "idle-wakeups", title: "idle loop: wake-ups", unit: "wake-ups", better: .lower,
                               ours: oursWakeups, peer: peerWakeups, target: nil, notes: notes),
                ScenarioResult(name: "idle-cpu", title: "idle loop: CPU", unit: "µs CPU", better: .lower,
                               ours: oursCPU, peer: peerCPU, target: nil, notes: notes),
            ]
        }
    }
}
