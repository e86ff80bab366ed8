import Dispatch
import Glibc
import RunLoopKit

/// RunLoopKit's timers and ports, DispatchQueue.main blocks and @MainActor
/// jobs take turns on the main thread (S-EXEC-3): none waits for another
/// kind to finish.
extension MainLoopCheck {
    static let timersPortsAndMainQueueInterleave = MainLoopCheck(name: "timers-ports-and-main-queue-interleave") {
        let rounds = 30
        let kinds = ["timer", "port", "block", "mainActor"]
        let trace = Box<[String]>([])
        let offMainThread = Box(0)
        let record: @Sendable (String) -> Void = { kind in
            if !onMainLoop { offMainThread.update { $0 += 1 } }
            trace.update { $0.append(kind) }
        }
        func count(_ kind: String) -> Int { trace.current.count { $0 == kind } }

        guard let timer = try? Timer(timeInterval: 0.005, repeats: true, block: { _ in record("timer") }),
              let port = try? Port(transport: .inproc) else { return "could not make the timer or the port" }
        defer {
            timer.invalidate()
            port.invalidate()
        }
        RunLoop.main.add(timer, forMode: .common)
        port.setMessageHandler { _ in record("port") }
        do { try port.schedule(in: RunLoop.main, forMode: .common) } catch { return "could not schedule the port: \(error)" }
        DispatchQueue.global().async {
            for index in 0..<rounds {
                try? port.send(msgid: UInt32(index), before: Date(timeIntervalSinceNow: 1))
                DispatchQueue.main.async { record("block") }
                usleep(3_000)
            }
        }
        Task { @MainActor in
            for _ in 0..<rounds {
                record("mainActor")
                try? await Task.sleep(for: .milliseconds(3))
            }
        }
        runMain { kinds.allSatisfy { count($0) >= rounds } }

        let counts = kinds.map { "\($0) \(count($0))" }.joined(separator: ", ")
        guard kinds.allSatisfy({ count($0) >= rounds }) else { return "not everything ran within 10 s: \(counts)" }
        if offMainThread.current > 0 { return "\(offMainThread.current) callouts ran off the main thread" }
        // Interleaved: every kind began before every other kind ended.
        let entries = trace.current
        for first in kinds {
            for other in kinds where other != first {
                if entries.firstIndex(of: first)! > entries.lastIndex(of: other)! {
                    return "every \(other) ran before the first \(first) (\(counts))"
                }
            }
        }
        return nil
    }
}
