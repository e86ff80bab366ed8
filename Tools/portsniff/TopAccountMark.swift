import RunLoopKit

/// Where a process's account stood when the last second closed.
/// `owed` comes from its count file too, so it runs ahead of what has
/// arrived while events are on their way; `provenOwed` ends at the last
/// event received, so `provenDropped` (the gaps before it) are events
/// certainly missed.
struct TopAccountMark {
    var owed: Int64 = 0
    var provenOwed: Int64 = 0
    var seen: Int64 = 0
    var provenDropped: Int64 = 0

    init() {}

    init(_ entry: TapAccount.Entry) {
        owed = Int64(entry.owed)
        provenOwed = entry.lastSeen >= entry.firstOwed ? Int64(entry.lastSeen - entry.firstOwed + 1) : 0
        seen = min(Int64(entry.seen), provenOwed)
        provenDropped = provenOwed - seen
    }
}
