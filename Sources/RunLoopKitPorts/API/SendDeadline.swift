@_spi(RunLoopKitInternals) import RunLoopKitCore

/// When a send stops waiting for room (S-PORT-4), read from the clocks only
/// if the send has to wait at all. Most sends find the channel's lock free
/// and room in the queue, and then never look at the time: converting a
/// `Date` costs two clock reads (the wall clock and the monotonic one).
struct SendDeadline {
    private let date: Date?
    private let fixedInstant: UInt64

    /// A deadline given as a wall-clock date (NSPort's `sendBeforeDate:`).
    init(_ date: Date) {
        self.date = date
        fixedInstant = 0
    }

    /// A deadline already on the monotonic clock (nanoseconds).
    init(instant: UInt64) {
        date = nil
        fixedInstant = instant
    }

    /// The deadline as a monotonic instant; for a date, read from the clocks
    /// now (the date is absolute, so when it is read does not move it).
    func instant() -> UInt64 {
        guard let date else { return fixedInstant }
        return MonotonicClock.instant(for: date)
    }
}
