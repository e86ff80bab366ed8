import RunLoopKit

/// What a recording's events prove missed, found in the order each process
/// numbered its events (S-TAP-1), not the time order they are shown in,
/// where one process's numbers interleave (1, 2, 9, 7, 8: no gap at all).
/// Each gap is counted with the event that follows it in its process's
/// numbers; events before the first owed, and numbers seen twice, prove
/// nothing.
struct RecordingGaps {
    /// Per process, the first event owed: the recording's account line says
    /// it; without one (a recording cut short, or of version 1), its lowest
    /// number.
    private(set) var firstOwed: [TapAccount.Process: UInt64] = [:]
    /// Per event, by its index in the order given: the events missed just
    /// before it in its process's numbers.
    private(set) var missedBefore: [UInt64]

    init(_ events: [PortTapEvent], accounts: [RecordedAccount]) {
        missedBefore = Array(repeating: 0, count: events.count)
        for line in accounts { firstOwed[TapAccount.Process(pid: line.pid, started: line.started)] = line.firstOwed }
        let byProcess = Dictionary(grouping: events.indices) { TapAccount.Process(pid: events[$0].pid, started: events[$0].started) }
        for (process, indices) in byProcess {
            let numbered = indices.sorted { (events[$0].seq, $0) < (events[$1].seq, $1) }
            let first = max(1, firstOwed[process] ?? events[numbered[0]].seq)
            firstOwed[process] = first
            var previous = first - 1
            for index in numbered {
                let seq = events[index].seq
                guard seq > previous else { continue }  // before the first owed, or seen twice
                missedBefore[index] = seq - previous - 1
                previous = seq
            }
        }
    }
}
