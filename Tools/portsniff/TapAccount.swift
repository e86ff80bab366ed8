import RunLoopKit

/// What a sniffer is owed by each tapped process, and what it got
/// (S-TAP-1): every process numbers its events from 1 (`PortTapEvent.seq`),
/// in the order they reach this sniffer, so a gap between two numbers is
/// exactly the events it missed. Owed are the events numbered after the
/// sniffer attached: from 1 for a process that started after the sniffer;
/// for one already running, after the count its file gave when the sniffer
/// started listening (without a file, from the first event it got). The
/// process's count file (`PortTapCounts`) also says what the process has
/// passed on since, so that events missed after the last one received, or
/// every event of a process never heard from, count too.
struct TapAccount {
    /// A process: its pid and its start time (pids are reused).
    struct Process: Hashable, Comparable {
        let pid: Int32
        let started: UInt64

        static func < (lhs: Process, rhs: Process) -> Bool { (lhs.pid, lhs.started) < (rhs.pid, rhs.started) }
    }

    /// One process's account.
    struct Entry {
        /// The first event owed.
        var firstOwed: UInt64
        /// The last event received (0: none yet).
        var lastSeen: UInt64 = 0
        /// Owed events received.
        var seen: UInt64 = 0
        /// Owed events the numbers prove missed: gaps before the last one
        /// received, in the order the process numbered them.
        var missed: UInt64 = 0
        /// Every event up to this one has left the process's tap (its count file).
        var settled: UInt64 = 0
        var name: String?
        var exited = false

        /// The last event owed so far.
        var lastOwed: UInt64 { max(lastSeen, settled) }
        var owed: UInt64 { lastOwed >= firstOwed ? lastOwed - firstOwed + 1 : 0 }
        var dropped: UInt64 { owed - min(seen, owed) }
    }

    /// This sniffer's own start time, as processes report theirs.
    let readerStarted: UInt64
    private(set) var entries: [Process: Entry] = [:]
    /// Where this sniffer attached to each process already running: the
    /// count its file gave then.
    private var attachedAt: [Process: UInt64] = [:]

    init(readerStarted: UInt64 = PortTap.processStartTime) {
        self.readerStarted = readerStarted
    }

    /// When the sniffer starts listening: the counts of the processes
    /// already tapped are its attach points.
    mutating func attach(_ counts: [PortTapCounts]) {
        for process in counts where !process.exited {
            attachedAt[Process(pid: process.pid, started: process.started)] = process.produced
        }
    }

    /// The processes' latest counts: what each has passed on by now.
    mutating func update(_ counts: [PortTapCounts]) {
        for process in counts {
            let key = Process(pid: process.pid, started: process.started)
            var entry = entries[key] ?? Entry(firstOwed: firstOwed(key, firstSeen: nil))
            entry.settled = max(entry.settled, process.settled)
            entry.name = entry.name ?? process.name
            entry.exited = process.exited
            if entries[key] != nil || entry.owed > 0 { entries[key] = entry }
        }
    }

    /// Counts one received event; returns how many events it shows were
    /// missed just before it. Live, a process's events arrive in the order
    /// of their numbers, so the gap is the one before `event`; a replay
    /// gives the gap it found in the order of the numbers (`missedBefore`),
    /// since it shows events in time order, where numbers interleave.
    mutating func note(_ event: PortTapEvent, missedBefore: UInt64? = nil) -> UInt64 {
        let seq = event.seq
        let key = Process(pid: event.pid, started: event.started)
        var entry = entries[key] ?? Entry(firstOwed: firstOwed(key, firstSeen: seq))
        guard seq >= entry.firstOwed else { return 0 }  // numbered before this sniffer attached
        let previous = max(entry.lastSeen, entry.firstOwed - 1)
        let missed = missedBefore ?? (seq > previous + 1 ? seq - previous - 1 : 0)
        entry.seen += 1
        entry.missed += missed
        entry.lastSeen = max(entry.lastSeen, seq)
        if entry.name == nil { entry.name = event.process }
        entries[key] = entry
        return missed
    }

    /// The first event owed by a process met for the first time.
    private func firstOwed(_ process: Process, firstSeen: UInt64?) -> UInt64 {
        if let replayed = replayFirstOwed[process] { return replayed }
        if process.started > readerStarted { return 1 }
        if let attached = attachedAt[process] { return attached + 1 }
        return firstSeen ?? UInt64.max
    }

    /// A replay: the first event owed by each process, as the recording
    /// says (its account lines, else its lowest number).
    private var replayFirstOwed: [Process: UInt64] = [:]

    /// An account for replaying a recording whose processes owe from `firstOwed`.
    init(replaying firstOwed: [Process: UInt64]) {
        readerStarted = 0
        replayFirstOwed = firstOwed
    }

    /// At the end of a replay: what the recording's account lines say each
    /// process owed in all (events missed after the last one recorded
    /// included) and whether it had exited.
    mutating func settle(with recorded: [RecordedAccount]) {
        for line in recorded {
            let key = Process(pid: line.pid, started: line.started)
            var entry = entries[key] ?? Entry(firstOwed: line.firstOwed)
            entry.settled = max(entry.settled, line.lastOwed)
            entry.name = entry.name ?? line.name
            entry.exited = line.exited
            entries[key] = entry
        }
    }

    /// The account lines a recording ends with.
    var recordedAccounts: [RecordedAccount] {
        entries.sorted { $0.key < $1.key }.filter { $0.value.owed > 0 }.map { process, entry in
            RecordedAccount(pid: process.pid, started: process.started, name: entry.name, firstOwed: entry.firstOwed,
                            lastOwed: entry.lastOwed, received: min(entry.seen, entry.owed), dropped: entry.dropped, exited: entry.exited)
        }
    }

    /// Whether every event owed has come: nothing is on its way.
    var isSettled: Bool { entries.values.allSatisfy { $0.seen >= $0.owed } }

    /// Events the numbers proved missed so far: grows as events come, and
    /// never takes a drop back (`totalDropped` also counts what the count
    /// files say is owed beyond the last event received).
    var totalMissed: UInt64 { entries.values.reduce(0) { $0 + $1.missed } }

    /// Events missed in all.
    var totalDropped: UInt64 {
        entries.values.reduce(0) { $0 + $1.dropped }
    }
}
