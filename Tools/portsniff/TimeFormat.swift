import Glibc

/// How the live view stamps its lines, as tcpdump's `-t` family does:
/// `-t` none, `-tt` seconds since 1970, `-ttt` the time since the previous
/// line, `-tttt` the date and time, `-ttttt` the time since the first line;
/// by default the time of day (`--time` names them: absolute, none, epoch,
/// delta, date, relative). Wall-clock times are the events' monotonic
/// times plus their process's anchor; differences are taken on the
/// monotonic clock, so they hold whatever the wall clock does.
enum TimeFormat: String, CaseIterable {
    case absolute, none, epoch, delta, date, relative

    /// tcpdump's count of `-t`: 1 none, 2 epoch, 3 delta, 4 date, 5 relative.
    init?(tcpdumpCount: Int) {
        let order: [TimeFormat] = [.none, .epoch, .delta, .date, .relative]
        guard tcpdumpCount >= 1, tcpdumpCount <= order.count else { return nil }
        self = order[tcpdumpCount - 1]
    }

    /// The column's width (0: no column).
    func width(milliseconds: Bool) -> Int {
        switch self {
        case .absolute: milliseconds ? 12 : 15
        case .none: 0
        case .epoch: milliseconds ? 14 : 17
        case .delta, .relative: milliseconds ? 10 : 13
        case .date: milliseconds ? 23 : 26
        }
    }

    /// The header of the column.
    var title: String {
        switch self {
        case .delta: "DELTA"
        case .relative: "SINCE START"
        default: "TIME"
        }
    }
}

/// Stamps lines in a `TimeFormat`, remembering the first and previous line's times.
struct TimeStamper {
    let format: TimeFormat
    let milliseconds: Bool
    private var first: Int64?
    private var previous: Int64?

    init(format: TimeFormat, milliseconds: Bool) {
        self.format = format
        self.milliseconds = milliseconds
    }

    /// The stamp of a line for `event`; nil for `.none`.
    mutating func stamp(wall: Int64, monotonic: Int64) -> String? {
        defer {
            if first == nil { first = monotonic }
            previous = monotonic
        }
        switch format {
        case .none: return nil
        case .absolute: return Self.clock(wall, milliseconds: milliseconds)
        case .date: return Self.date(wall) + " " + Self.clock(wall, milliseconds: milliseconds)
        case .epoch: return Self.seconds(wall, milliseconds: milliseconds)
        case .delta: return Self.seconds(monotonic - (previous ?? monotonic), milliseconds: milliseconds)
        case .relative: return Self.seconds(monotonic - (first ?? monotonic), milliseconds: milliseconds)
        }
    }

    /// Seconds with 6 (or 3) decimals: `12.000450`.
    static func seconds(_ nanoseconds: Int64, milliseconds: Bool) -> String {
        let sign = nanoseconds < 0 ? "-" : ""
        let magnitude = nanoseconds.magnitude
        let (fraction, digits) = milliseconds
            ? ((magnitude % 1_000_000_000) / 1_000_000, 3) : ((magnitude % 1_000_000_000) / 1_000, 6)
        let text = String(fraction)
        return sign + "\(magnitude / 1_000_000_000)." + String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// HH:MM:SS.micros (or .millis) in local time.
    static func clock(_ nanoseconds: Int64, milliseconds: Bool = false) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        let (fraction, digits) = milliseconds
            ? ((nanoseconds % 1_000_000_000) / 1_000_000, 3) : ((nanoseconds % 1_000_000_000) / 1_000, 6)
        let fractionText = String(fraction)
        return "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))."
            + String(repeating: "0", count: max(0, digits - fractionText.count)) + fractionText
    }

    /// YYYY-MM-DD in local time.
    static func date(_ nanoseconds: Int64) -> String {
        var seconds = time_t(nanoseconds / 1_000_000_000)
        var parts = tm()
        localtime_r(&seconds, &parts)
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))"
    }

    private static func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
