import CBenchPeers
import RunLoopKit
import Glibc

/// The keep-alive leak experiment at full size (S-KEEP-3, and
/// Examples/keepalive-churn): start a LoopThread, run one task on it, stop
/// it, 100,000 times in a row; then compare open fds and RSS with the start.
/// The peer is the bare cost of starting and joining a pthread that runs
/// one task (C), the floor under any keep-alive thread.
struct KeepAliveChurn: Scenario {
    let name = "keepalive-churn"
    let summary = "start/perform/stop 100,000 LoopThreads: time per thread (vs bare pthread), fds and RSS growth"

    /// RSS may wander a little (allocator caches); Examples/keepalive-churn's bound.
    static let rssBound = 8.0

    func run(_ config: RunConfig) -> [ScenarioResult] {
        let count = config.churnCount
        let countNote = config.quick ? "\(count) threads (--quick; the full run churns 100,000)" : "\(count) threads"
        var ours = Measurement(label: "RunLoopKit LoopThread start + performAndWait + stop", samples: [], better: .lower)
        var peer = Measurement(label: "bare pthread create + join (C)", samples: [], better: .lower)
        var fdGrowth = Measurement(label: "RunLoopKit LoopThread", samples: [], better: .lower)
        var rssGrowth = fdGrowth
        // In ten rounds, each side's share in turn, so that drift on a shared
        // machine falls on both sides alike.
        let rounds = 10
        let perRound = max(1, count / rounds)
        var fdNotes: [String] = []
        var notes = [countNote, "one after another on this thread, after 200 warm-up threads, in \(rounds) rounds of \(perRound) per side, interleaved"]
        var oursElapsed = 0.0, peerElapsed = 0.0
        do {
            for index in 0..<200 { _ = try Self.churnOne(index) }
            let fds0 = ProcessStats.openFileDescriptorTargets(), rss0 = ProcessStats.residentBytes()
            var samples = [Double]()
            samples.reserveCapacity(perRound * rounds)
            var checksum = 0
            for round in 0..<rounds {
                let started = monotonicNanoseconds()
                for index in (round * perRound)..<((round + 1) * perRound) {
                    let start = monotonicNanoseconds()
                    checksum &+= try Self.churnOne(index)
                    samples.append(Double(monotonicNanoseconds() - start) / 1000)
                }
                oursElapsed += secondsSince(started)
                var peerSamples = [UInt64](repeating: 0, count: perRound)
                var peerChecksum: UInt64 = 0
                let peerStarted = monotonicNanoseconds()
                do {
                    try checkC(bench_pthread_churn(Int32(perRound), &peerSamples, &peerChecksum), "pthread churn")
                    peer.samples += peerSamples.map { Double($0) / 1000 }
                } catch {
                    peer.error = "\(error)"
                }
                peerElapsed += secondsSince(peerStarted)
            }
            let total = perRound * rounds
            let rss1 = ProcessStats.residentBytes()
            let (fds1, fdNote) = Self.settledDescriptors(since: fds0)
            guard checksum == (total - 1) * total / 2 else { throw BenchError("tasks missing or repeated (checksum \(checksum))") }
            ours.samples = samples
            fdGrowth.samples = [Double(fds1.count - fds0.count)]
            rssGrowth.samples = [Double(rss1 - rss0) / 1_048_576]
            if !fdNote.isEmpty { fdNotes.append("fds \(fds0.count) → \(fds1.count)" + fdNote) }
            notes.append("RunLoopKit: \(format(oursElapsed)) s in all; fds \(fds0.count) → \(fds1.count); RSS \(format(Double(rss0) / 1_048_576)) → \(format(Double(rss1) / 1_048_576)) MiB")
            notes.append("bare pthreads: \(format(peerElapsed)) s in all")
        } catch {
            ours.error = "\(error)"
            fdGrowth.error = "\(error)"
            rssGrowth.error = "\(error)"
        }
        return [
            ScenarioResult(name: "keepalive-churn-time", title: "keep-alive churn: time per LoopThread (start, one task, stop)",
                           unit: "µs/thread", better: .lower, ours: ours, peer: peer,
                           target: .ratioAtMost(2).standing(.notDue), notes: notes),
            ScenarioResult(name: "keepalive-churn-fds", title: "keep-alive churn: open fds at the end minus at the start",
                           unit: "fds", better: .lower, ours: fdGrowth, peer: nil,
                           target: Target(text: "0 (nothing leaks)") { result in result.ours.summary.map { $0.max == 0 } },
                           notes: [countNote], visitNotes: fdNotes),
            ScenarioResult(name: "keepalive-churn-rss", title: "keep-alive churn: RSS at the end minus at the start",
                           unit: "MiB", better: .lower, ours: rssGrowth, peer: nil,
                           target: Target(text: "≤ \(format(Self.rssBound)) MiB (Examples/keepalive-churn's bound)") { result in
                               result.ours.summary.map { $0.max <= Self.rssBound }
                           },
                           notes: [countNote]),
        ]
    }

    /// The open fds after the churn, and a note naming those that came or
    /// went. A descriptor that another part of the process holds for a
    /// moment (libzmq reconnecting an earlier scenario's socket whose peer
    /// is gone, the tap writing its count file) may be open at the last
    /// reading: more than at the start, the fds are read again every 10 ms
    /// for up to a second. A leaked descriptor stays, so what stays is the
    /// growth; the note says what was read first.
    static func settledDescriptors(since start: [Int32: String]) -> ([Int32: String], String) {
        var now = ProcessStats.openFileDescriptorTargets()
        let first = now
        var waited = 0
        while now.count > start.count && waited < 100 {
            usleep(10_000)
            waited += 1
            now = ProcessStats.openFileDescriptorTargets()
        }
        let describe = { (fds: [Int32: String]) in fds.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ") }
        let came = first.filter { start[$0.key] != $0.value }, went = start.filter { first[$0.key] != $0.value }
        var note = ""
        if !came.isEmpty { note += "; came: " + describe(came) }
        if !went.isEmpty { note += "; went: " + describe(went) }
        if waited > 0 { note += " (\(first.count) at the first reading, \(now.count) after \(waited * 10) ms)" }
        return (now, note)
    }

    /// Starts a LoopThread, runs one task on it, stops it.
    static func churnOne(_ index: Int) throws -> Int {
        let thread = LoopThread(name: "churn-\(index % 1000)")
        try thread.start()
        let answer = try thread.performAndWait { index }
        thread.stop()
        return answer
    }
}
