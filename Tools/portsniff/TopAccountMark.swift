import RunLoopKit

/// Where a process's account stood when the last second closed.
/// `owed` comes from its count file too, so it runs ahead of what has
/// arrived while events are on their way; `provenOwed` is what arrived and
/// the gaps its numbers prove (`provenDropped`, events certainly missed).
struct TopAccountMark {
    var owed: Int64 = 0
    var provenOwed: Int64 = 0
    var seen: Int64 = 0
    var provenDropped: Int64 = 0

    init() {}

    init(_ entry: TapAccount.Entry) {
        owed = Int64(entry.owed)
        // What was received and the gaps proven before it, counted as the
        // events came: never more than later seconds take back.
        seen = Int64(entry.seen)
        provenDropped = Int64(entry.missed)
        provenOwed = seen + provenDropped
    }
}
