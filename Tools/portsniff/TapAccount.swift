import Glibc
import RunLoopKit

/// What a sniffer is owed by each tapped process, and what it got
/// (S-TAP-1): every process numbers its events from 1 (`PortTapEvent.seq`),
/// in the order they reach this sniffer, so a gap between two numbers is
/// exactly the events it missed, dropped by the tap's queue or by a full
/// socket. For a process that started after this sniffer, every event from
/// 1 is owed, so a gap before its first event counts too; for one that was
/// already running, what came before the sniffer's first event from it is
/// not owed. (Events missed after a process's last event reach no sniffer
/// through later numbers: the per-process count file is still to come.)
struct TapAccount {
    /// A process: its pid and its start time (pids are reused).
    struct Process: Hashable, Comparable {
        let pid: Int32
        let started: UInt64

        static func < (lhs: Process, rhs: Process) -> Bool { (lhs.pid, lhs.started) < (rhs.pid, rhs.started) }
    }

    /// One process's account.
    struct Entry {
        /// The first event owed: 1, or the first one seen.
        var firstOwed: UInt64
        var lastSeen: UInt64
        var seen: UInt64 = 0
        var dropped: UInt64 = 0
    }

    /// This sniffer's own start time, as processes report theirs.
    let readerStarted: UInt64
    private(set) var entries: [Process: Entry] = [:]
    /// Drops counted from the `dropped` field of events that carry no
    /// number (recordings made before events were numbered), per pid.
    private(set) var legacyDrops: [Int32: UInt64] = [:]

    init(readerStarted: UInt64 = TapAccount.ownStartTime()) {
        self.readerStarted = readerStarted
    }

    /// Counts one received event; returns how many events it shows were missed.
    mutating func note(_ event: PortTapEvent) -> UInt64 {
        guard let seq = event.seq else { return noteUnnumbered(event) }
        let process = Process(pid: event.pid, started: event.started ?? 0)
        guard var entry = entries[process] else {
            // Started after this sniffer: owed from its first event.
            let owedFrom: UInt64 = (event.started ?? 0) > readerStarted ? 1 : seq
            entries[process] = Entry(firstOwed: owedFrom, lastSeen: seq, seen: 1, dropped: seq - owedFrom)
            return seq - owedFrom
        }
        entry.seen += 1
        let missed = seq > entry.lastSeen ? seq - entry.lastSeen - 1 : 0
        entry.dropped += missed
        entry.lastSeen = max(entry.lastSeen, seq)
        entries[process] = entry
        return missed
    }

    /// The old way, for recordings without numbers: the process's drop
    /// count as its latest event carries it.
    private mutating func noteUnnumbered(_ event: PortTapEvent) -> UInt64 {
        let previous = legacyDrops[event.pid] ?? 0
        legacyDrops[event.pid] = max(previous, event.dropped)
        return event.dropped > previous ? event.dropped - previous : 0
    }

    /// Events missed in all.
    var totalDropped: UInt64 {
        entries.values.reduce(0) { $0 + $1.dropped } + legacyDrops.values.reduce(0, +)
    }

    /// This process's start time in clock ticks since boot (field 22 of
    /// /proc/self/stat), as the tap reports each process's.
    static func ownStartTime() -> UInt64 {
        guard let file = fopen("/proc/self/stat", "r") else { return 0 }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 1024)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return 0 }
        let line = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        // The name (field 2) is in parentheses and may hold spaces: count from after it.
        guard let close = line.lastIndex(of: ")") else { return 0 }
        let fields = line[line.index(after: close)...].split(separator: " ")
        // fields[0] is field 3 (the state); field 22 is fields[19].
        return fields.count > 19 ? UInt64(fields[19]) ?? 0 : 0
    }
}
