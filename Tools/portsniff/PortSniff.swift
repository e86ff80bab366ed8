import ArgumentParser
import Glibc
import RunLoopKit

/// portsniff: shows the port traffic of processes whose tap is on
/// (RUNLOOPKIT_TAP=1), live, filtered, as statistics or JSON, and records
/// and replays it.
struct PortSniff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "portsniff",
        abstract: "Show RunLoopKit port traffic live: every send and delivery of processes started with RUNLOOPKIT_TAP=1.",
        discussion: """
            Start it before or after the processes it watches. Filters combine: an event is shown when it \
            matches every filter given; several values of one filter match any of them. Ctrl-C prints a summary. \
            `portsniff timeline FILE --svg OUT` draws a recording as a timeline (see portsniff timeline --help).
            """)

    // Each option names what it takes (N, ID, NAME, FILE...): by default
    // ArgumentParser shows the property's name, e.g. `--write <write>`.
    @Option(help: ArgumentHelp("The tap endpoint to listen on (default: a socket of this sniffer's own in <runtime dir>/tap/, where RUNLOOPKIT_TAP=1 reports to every sniffer, each seeing everything).", valueName: "ENDPOINT"))
    var endpoint: String?

    @Option(name: .customLong("msgid"), help: ArgumentHelp("Only messages with this msgid (repeatable).", valueName: "ID"))
    var msgids: [UInt32] = []

    @Option(name: .customLong("port"), help: ArgumentHelp("Only messages from or to a port whose name (a registered name, or <pid>/<port id>) matches GLOB; !GLOB: none that matches (repeatable).", valueName: "GLOB"))
    var ports: [String] = []

    @Option(name: .customLong("process"), help: ArgumentHelp("Only events of processes whose name matches GLOB; !GLOB: not those (repeatable).", valueName: "GLOB"))
    var processes: [String] = []

    @Option(name: .customLong("thread"), help: ArgumentHelp("Only events on threads whose name matches GLOB (dispatch workers are dispatch-<qos>); !GLOB: not those (repeatable).", valueName: "GLOB"))
    var threads: [String] = []

    @Option(name: .customLong("kind"), help: ArgumentHelp("Only events of this kind: \(Self.kindNames); !KIND: all but it (repeatable).", valueName: "KIND"))
    var kinds: [String] = []

    @Option(name: .customLong("pid"), help: ArgumentHelp("Only events of this process (repeatable).", valueName: "PID"))
    var pids: [Int32] = []

    @Option(name: .customLong("trace-id"), help: ArgumentHelp("Only messages sent in this W3C trace: its trace id (32 hex digits, as tracers show it) or the id's first digits (repeatable).", valueName: "HEX"))
    var w3cTraceIDs: [String] = []

    // Unconditional, so that `--hex -1` reaches validate() and gets its
    // message rather than ArgumentParser's "Missing value".
    @Option(parsing: .unconditional, help: ArgumentHelp("Show the first N bytes of a message's first data component, in hex and as text: 0 to \(PortTap.maxDataBytes) (the tap sends RUNLOOPKIT_TAP_BYTES, default and most \(PortTap.maxDataBytes)).", valueName: "N"))
    var hex: Int?

    @Flag(name: .customShort("t"), help: "As tcpdump: -t no time, -tt seconds since 1970, -ttt time since the previous line, -tttt date and time, -ttttt time since the first line.")
    var tcpdumpTime: Int

    @Option(help: ArgumentHelp("How lines are stamped: absolute (time of day, the default), none, epoch, delta, date, relative.", valueName: "FORMAT"))
    var time: String?

    @Flag(help: "A table refreshed every second: per port and msgid, messages/s, bytes/s, latency p50/p99, drops.")
    var stats = false

    @Flag(help: "A full-screen view as htop's, refreshed every second: per port (key p), process (c) or thread (t; Tab: the next), with events/s, messages/s, bytes/s, drops/s, latency p50/p99 and totals. Sorted by rate; r rate, n name, d drops, l p99, m messages/s, b bytes/s, i reverses. Rates count missed events: exactly per process, estimated per port and thread (marked ~). On the alternate screen, given back on exit; q quits as Ctrl-C does (then the summary), Ctrl-Z suspends. Not on a terminal: the three tables every second as plain text, as top -b (with --read: one per recorded second).")
    var top = false

    @Flag(help: "JSON Lines, as --write records them: a header line, then one object per event.")
    var json = false

    @Option(help: ArgumentHelp("Record every event received (before filters) to FILE (- for standard output), as JSON Lines, in time order (see --window).", valueName: "FILE"))
    var write: String?

    @Option(help: ArgumentHelp("What --write writes: jsonl (the recording, which --read replays) or trace (Trace Event JSON for Perfetto and Chrome's trace viewer).", valueName: "FORMAT"))
    var format = "jsonl"

    @Option(help: ArgumentHelp("Replay FILE (- for standard input), a recording made with --write, through the same filters and views, instead of listening.", valueName: "FILE"))
    var read: String?

    @Option(help: ArgumentHelp("Exit after N events (after filters).", valueName: "N"))
    var count: Int?

    @Option(help: ArgumentHelp("Hold each event up to MS milliseconds so that events show, and --write records them, in time order; one later than that shows at once, marked late (default: 50; 0: as they arrive).", valueName: "MS"))
    var window = 50

    @Option(name: .customLong("max-rate"), help: ArgumentHelp("On a terminal, above N lines a second the live view prints one summary line a second instead of every event, until the rate falls again (default: 200; 0: no limit). Not applied to a pipe or file; --write records every event.", valueName: "N"))
    var maxRate: Int?

    @Flag(name: .customLong("no-color"), help: "No colour (also when NO_COLOR is set or output is not a terminal).")
    var noColor = false

    @Option(help: ArgumentHelp("The niceness of the thread that shows and records the events, once the sniffer listens: 0 to 19, default 10, below its reader thread and the programs it watches, so that on a busy machine it is the one kept waiting (its reader holds what it falls behind by); 0 keeps the sniffer's own.", valueName: "N"))
    var nice: Int32 = 10

    @Flag(help: "With -- COMMAND: also report the program's loops, each pass, sleep and callout an event (RUNLOOPKIT_TAP_LOOPS=1), for a timeline.")
    var loops = false

    @Argument(parsing: .postTerminator, help: ArgumentHelp("After --: a program to run with the tap on (RUNLOOPKIT_TAP=1), as strace runs one; portsniff passes SIGINT and SIGTERM on to it, stops when it exits, and exits with its status.", valueName: "COMMAND"))
    var command: [String] = []

    /// Every kind --kind takes, as --help and its error list them.
    static let kindNames = PortTapEvent.Kind.allCases.map(\.rawValue).joined(separator: ", ")

    func validate() throws {
        if let count, count <= 0 { throw ValidationError("--count must be above zero") }
        if let hex, !(0...PortTap.maxDataBytes).contains(hex) {
            throw ValidationError("--hex takes 0 to \(PortTap.maxDataBytes) (the tap reports at most \(PortTap.maxDataBytes) bytes of a message), not \(hex)")
        }
        if window < 0 { throw ValidationError("--window must not be negative") }
        if !(0...19).contains(nice) { throw ValidationError("--nice takes 0 to 19, not \(nice)") }
        if stats && json { throw ValidationError("--stats and --json are two views: choose one") }
        if top && (stats || json) { throw ValidationError("--top is a view of its own: not with --\(stats ? "stats" : "json")") }
        if read != nil && write != nil { throw ValidationError("--read replays a recording; --write records live traffic: choose one") }
        if write == "-" && (json || stats || top) { throw ValidationError("--write - records to standard output: not with another view there") }
        if format != "jsonl" && format != "trace" { throw ValidationError("--format takes jsonl or trace, not \(format)") }
        if format == "trace" && write == nil { throw ValidationError("--format trace says what --write writes: give --write FILE") }
        if let maxRate, maxRate < 0 { throw ValidationError("--max-rate must not be negative") }
        if tcpdumpTime > 5 { throw ValidationError("-t is given at most five times (-ttttt)") }
        if let time, TimeFormat(rawValue: time) == nil {
            throw ValidationError("--time takes \(TimeFormat.allCases.map(\.rawValue).joined(separator: ", ")), not \(time)")
        }
        if time != nil && tcpdumpTime > 0 { throw ValidationError("-t and --time both say how lines are stamped: choose one") }
        for kind in kinds where PortTapEvent.Kind(rawValue: kind.hasPrefix("!") ? String(kind.dropFirst()) : kind) == nil {
            throw ValidationError("--kind takes \(Self.kindNames) (or ! and one), not \(kind)")
        }
        for id in w3cTraceIDs where id.isEmpty || id.count > 32 || !id.allSatisfy(\.isHexDigit) {
            throw ValidationError("--trace-id takes a W3C trace id, or its first digits: up to 32 hex digits, not \(id)")
        }
        if loops && command.isEmpty {
            throw ValidationError("--loops traces the program run after --; for other programs set RUNLOOPKIT_TAP_LOOPS=1 in their environment")
        }
        if !command.isEmpty && (read != nil || endpoint != nil) {
            throw ValidationError("-- COMMAND runs a program that reports to the readers' directory: not with --read or --endpoint")
        }
    }

    func run() throws {
        let colour = !noColor && getenv("NO_COLOR") == nil && isatty(1) == 1
        let timeFormat = time.flatMap(TimeFormat.init(rawValue:)) ?? TimeFormat(tcpdumpCount: tcpdumpTime) ?? .absolute
        let filter = EventFilter(
            msgids: Set(msgids), ports: .init(ports), processes: .init(processes), threads: .init(threads), pids: Set(pids),
            kinds: .init(kinds), w3cTraceIDPrefixes: w3cTraceIDs.map { $0.lowercased() })
        // With --write -, the records are the output: the live view is not shown.
        let view: Sniffer.View = write == "-" ? .none : json ? .json : top ? .top : (stats ? .stats : .live)
        let sniffer = Sniffer(
            filter: filter, view: view,
            live: LiveView(colour: colour, hexBytes: hex, width: LiveView.terminalWidth(1), timeFormat: timeFormat),
            limit: count, windowMilliseconds: window,
            maxLinesPerSecond: maxRate ?? (isatty(1) == 1 ? Sniffer.terminalMaxLinesPerSecond : 0),
            niceness: nice)
        if let read {
            try sniffer.replay(path: read)
            return
        }
        try sniffer.listen(on: endpoint, recordingTo: write, asTrace: format == "trace", running: command, tracingLoops: loops)
        if let status = sniffer.commandStatus { throw ExitCode(status) }
    }
}
