import RunLoopKit

/// `portsniff --top`: the traffic of the last second as htop shows
/// processes: a header of totals, then one row per port (destination), per
/// process or per thread, sorted by rate, each with its events/s, messages/s,
/// bytes/s, drops/s, send-to-delivery latency p50 and p99, and totals.
///
/// Rates count the tap events this sniffer missed (drops): per process
/// exactly, its events shown and those its numbers prove missed (gaps
/// before an event received, `TapAccount`); per port and per thread by
/// estimate, the row's events of each process scaled by that process's
/// ratio of the two over the second, so that a process's rows add up to its
/// own figures, shown with a `~` before the figure. With filters, a process
/// row shows only part of its events and all its drops, so it is marked
/// estimated too. What the count files say is owed beyond the last event
/// received is "not yet received" (on its way, or missed after the last
/// one), which the summary at exit settles.
///
/// The model is fed the events shown (`add`), closed once a second (`tick`
/// live, `replay` per recorded second) and drawn as text: a screen that fits
/// a terminal (`screen`), or plain tables for a pipe (`plainText`). It does
/// no I/O. Its rows are `TopRow`s, their account `TopAccountMark`s; the
/// table is drawn in TopView+Table.swift, its figures written by `TopText`.
struct TopView {
    /// Which rows the table shows.
    enum Table: CaseIterable {
        case ports, processes, threads
    }

    /// What the rows are sorted by.
    enum Order {
        case rate, name, drops, latency, messages, bytes
    }

    /// What a key asks of the sniffer.
    enum KeyAction: Equatable {
        case none, redraw, quit
    }

    /// A thread row's key: tids are per process.
    struct ThreadKey: Hashable {
        let process: TapAccount.Process
        let tid: Int32
    }

    /// The header's figures for the last closed second.
    private struct Totals {
        var rate = 0.0
        var messages = 0.0
        var drops = 0.0
        var rateEstimated = false
        var dropsEstimated = false
        var received: UInt64 = 0
        var dropped: UInt64 = 0
        /// Owed (the count files say the events have left their processes)
        /// but not received yet: on their way, or missed after the last one
        /// received (the summary at exit tells).
        var pending: UInt64 = 0
        /// The wall-clock time the second ended.
        var clock: Int64 = 0
        /// Since the sniffer started (or the recording's first event).
        var uptime: Int64 = 0
    }

    /// A row that counted nothing this long leaves the table, as an exited
    /// process leaves htop's (an exited process's row at once).
    static let idleSecondsKept = 10

    var table: Table = .ports
    var order: Order = .rate
    var reversed = false
    /// Whether filters hide part of the processes' events, so that a
    /// process's rate is estimated as a port's is.
    let filtered: Bool

    private(set) var ports: [String: TopRow] = [:]
    private(set) var processes: [TapAccount.Process: TopRow] = [:]
    private(set) var threads: [ThreadKey: TopRow] = [:]
    private var marks: [TapAccount.Process: TopAccountMark] = [:]
    private var messagesInWindow = 0
    private var tracesInWindow: Set<UInt64> = []
    private var totals = Totals()
    /// Seconds closed so far.
    private(set) var closedSeconds = 0

    /// Live: when the sniffer started and the last second closed (monotonic ns).
    private let startedAt: Int64
    private var lastTick: Int64?

    /// Replay: the start of the recorded second being measured, and the
    /// recording's first event.
    private var replaySecondStart: Int64?
    private var replayFirst: (monotonic: Int64, anchor: Int64)?

    init(filtered: Bool, startedAt: Int64) {
        self.filtered = filtered
        self.startedAt = startedAt
    }

    // MARK: - Counting

    /// Counts an event that passed the filters, and the events its
    /// process's numbers proved missed since the last one counted (`missed`).
    mutating func add(_ event: PortTapEvent, missed: UInt64 = 0) {
        let process = TapAccount.Process(pid: event.pid, started: event.started)
        let isMessage = event.kind == .send || event.kind == .deliver
        // Not `trace.map { insert }`: a closure that mutates the set copies it, every event.
        if isMessage, Self.isNew(event.trace, in: &tracesInWindow) { messagesInWindow += 1 }
        let processName = event.process ?? "?"
        processes[process, default: TopRow(name: processName, id: event.pid)].count(event, from: process, missed: Int(missed))
        let thread = ThreadKey(process: process, tid: event.tid)
        threads[thread, default: TopRow(name: "", id: event.tid)].count(event, from: process)
        // The thread's name may change (a loop named later): the latest shows.
        threads[thread]?.name = event.thread
        threads[thread]?.context = " (\(processName))"
        // Loop tracing's events have no port.
        if !event.destination.isEmpty {
            ports[event.destination, default: TopRow(name: event.destination, id: nil)].count(event, from: process)
        }
    }

    /// Whether a message is counted for the first time: one without a trace
    /// id cannot be matched, so it always is.
    static func isNew(_ trace: UInt64?, in traces: inout Set<UInt64>) -> Bool {
        guard let trace else { return true }
        return traces.insert(trace).inserted
    }

    /// Live: closes the second that ends `now` (monotonic ns), `wallTime`
    /// on the wall clock, against the sniffer's account.
    mutating func tick(now: Int64, wallTime: Int64, account: TapAccount) {
        let seconds = Double(now - (lastTick ?? startedAt)) / 1e9
        lastTick = now
        close(seconds: seconds, clock: wallTime, uptime: now - startedAt, account: account)
    }

    /// Replay: call with every recorded event (filtered or not), in time
    /// order, before it is shown, with the replay's account so far (the
    /// event not yet in it). Returns the plain tables of the recorded
    /// second it ends, if it starts the next; seconds without an event are
    /// skipped.
    mutating func replay(_ event: PortTapEvent, account: TapAccount) -> String? {
        var tables: String?
        if let start = replaySecondStart {
            let elapsed = event.monotonicTime - start
            if elapsed >= 1_000_000_000 {
                tables = closeReplaySecond(end: start + 1_000_000_000, account: account)
                replaySecondStart = start + elapsed / 1_000_000_000 * 1_000_000_000
            }
        } else {
            replaySecondStart = event.monotonicTime
            replayFirst = (event.monotonicTime, event.time - event.monotonicTime)
        }
        return tables
    }

    /// Replay: the tables of the last recorded second, if there was one.
    mutating func endReplay(account: TapAccount) -> String? {
        guard let start = replaySecondStart else { return nil }
        replaySecondStart = nil
        return closeReplaySecond(end: start + 1_000_000_000, account: account)
    }

    private mutating func closeReplaySecond(end: Int64, account: TapAccount) -> String {
        let first = replayFirst ?? (end, 0)
        close(seconds: 1, clock: end + first.anchor, uptime: end - first.monotonic, account: account)
        return plainText()
    }

    /// Turns the second's counts into figures, and starts the next. A
    /// process row's figures are its events shown and those its numbers
    /// proved missed; each of its port and thread rows gets its events
    /// scaled by the process's ratio of the two, so that they add up to the
    /// process's. What the count files say is owed beyond that is "not yet
    /// received" in the header, until the events come or the summary counts
    /// them dropped.
    private mutating func close(seconds: Double, clock: Int64, uptime: Int64, account: TapAccount) {
        // A second cut short (at exit) still gives rates, not a division by zero.
        let seconds = max(seconds, 0.001)
        var ratios: [TapAccount.Process: TopRow.Ratios] = [:]
        for (process, row) in processes where row.windowEvents > 0 {
            let events = Double(row.windowEvents), missed = Double(row.windowMissed)
            ratios[process] = TopRow.Ratios(owed: (events + missed) / events, dropped: missed / events)
        }
        var next = Totals(clock: clock, uptime: uptime)
        for process in Array(processes.keys) {
            let exited = account.entries[process]?.exited ?? false
            processes[process]!.settle(seconds: seconds, estimated: filtered, exited: exited)
            let figures = processes[process]!.figures
            next.rate += figures.rate
            next.drops += figures.drops
            next.rateEstimated = next.rateEstimated || figures.rateEstimated
            next.dropsEstimated = next.dropsEstimated || figures.dropsEstimated
        }
        for key in Array(ports.keys) { ports[key]!.estimate(seconds: seconds, ratios: ratios) }
        for key in Array(threads.keys) { threads[key]!.estimate(seconds: seconds, ratios: ratios) }
        // A process's rows leave with it: its thread rows at once, a port's
        // once every process that counted on it has left.
        processes = processes.filter { $0.value.idleSeconds <= Self.idleSecondsKept }
        threads = threads.filter { $0.value.idleSeconds <= Self.idleSecondsKept && processes[$0.key.process] != nil }
        ports = ports.filter { $0.value.idleSeconds <= Self.idleSecondsKept && $0.value.contributors.contains { processes[$0] != nil } }

        next.messages = Double(messagesInWindow) / seconds
        let standing = account.entries.values.map(TopAccountMark.init)
        next.received = UInt64(standing.reduce(0) { $0 + $1.seen })
        next.dropped = UInt64(standing.reduce(0) { $0 + $1.provenDropped })
        next.pending = UInt64(standing.reduce(0) { $0 + max(0, $1.owed - $1.provenOwed) })
        totals = next
        messagesInWindow = 0
        tracesInWindow.removeAll(keepingCapacity: true)
        closedSeconds += 1
    }

    // MARK: - Keys

    /// A key pressed: p, c, t (or Tab) choose the table; r, n, d, l, m, b
    /// the order, i reverses it; space or Ctrl-L redraws; q quits.
    mutating func press(_ key: UInt8) -> KeyAction {
        switch Character(UnicodeScalar(key)).lowercased() {
        case "q": return .quit
        case "p": table = .ports
        case "c": table = .processes
        case "t": table = .threads
        case "\t":
            let all = Table.allCases
            table = all[(all.firstIndex(of: table)! + 1) % all.count]
        case "r": sort(by: .rate)
        case "n": sort(by: .name)
        case "d": sort(by: .drops)
        case "l": sort(by: .latency)
        case "m": sort(by: .messages)
        case "b": sort(by: .bytes)
        case "i": reversed.toggle()
        case " ", "\u{0C}": break
        default: return .none
        }
        return .redraw
    }

    /// A new order starts in its natural direction (names A to Z, figures
    /// highest first).
    private mutating func sort(by newOrder: Order) {
        if newOrder != order { reversed = false }
        order = newOrder
    }

    // MARK: - Drawing

    /// The screen for a terminal `width` columns wide and `height` rows
    /// high: no line wider, no more lines; the table is cut to fit, saying
    /// how many rows were left out. `colour` shows the column titles in
    /// reverse video.
    func screen(width: Int, height: Int, colour: Bool) -> [String] {
        let top = header().map { TopText.fit($0, width) } + [""]
        let (titles, rows, _) = tableLines(table, width: width)
        let bottom = [legend(table), Self.footer(width: width)].map { TopText.fit($0, width) }
        let room = max(0, height - top.count - 1 - bottom.count)
        var body = rows.isEmpty ? [closedSeconds == 0 ? "(measuring the first second)" : "(no traffic)"] : rows
        if !rows.isEmpty && body.count > room {
            let shown = max(0, room - 1)
            let cut = body.count - shown
            body = Array(body.prefix(shown)) + ["… \(cut) more row\(cut == 1 ? "" : "s") not shown (a taller terminal shows them)"]
        }
        // htop's bar of titles: the whole width in reverse video.
        let bar = colour ? "\u{1B}[7m" + titles + String(repeating: " ", count: max(0, width - titles.count)) + "\u{1B}[0m" : titles
        let lines = top + [bar] + body.map { TopText.fit($0, width) } + bottom
        return Array(lines.prefix(height))
    }

    /// Plain text, as `top -b` prints: the header, then the three tables
    /// (ports, processes, threads) in the current order, every row, and a
    /// legend when a figure is estimated; a blank line before all but the
    /// first second's.
    func plainText() -> String {
        var lines = closedSeconds > 1 ? [""] : []
        lines += header()
        var estimated = false
        for table in Table.allCases {
            let (titles, rows, someEstimated) = tableLines(table, width: nil)
            lines += ["", titles] + (rows.isEmpty ? ["(no traffic)"] : rows)
            estimated = estimated || someEstimated
        }
        if estimated { lines.append(estimateLegend) }
        return lines.joined(separator: "\n")
    }

    private func header() -> [String] {
        let clock = closedSeconds == 0 ? "--:--:--" : String(TimeStamper.clock(totals.clock).prefix(8))
        func plural(_ count: Int, _ noun: String) -> String { "\(count) \(noun)\(count == 1 ? "" : "es")" }
        let percent = totals.received + totals.dropped == 0
            ? 0 : Double(totals.dropped) * 100 / Double(totals.received + totals.dropped)
        return [
            "portsniff --top - \(clock) up \(TopText.uptime(totals.uptime)), \(plural(processes.count, "process")), "
                + "\(threads.count) thread\(threads.count == 1 ? "" : "s"), \(ports.count) port\(ports.count == 1 ? "" : "s")",
            "Rates:   \(TopText.number(totals.rate, estimated: totals.rateEstimated)) events/s, \(TopText.number(totals.messages)) messages/s, "
                + "\(TopText.number(totals.drops, estimated: totals.dropsEstimated)) drops/s",
            "Sniffer: \(totals.received) received, \(totals.dropped) dropped (\(TopText.percent(percent)))"
                + (totals.pending > 0 ? ", \(totals.pending) not yet received" : ""),
        ]
    }

    /// What `~` means: a row's share of its process's figures; with
    /// filters, a process's rows are estimated too.
    private var estimateLegend: String {
        filtered
            ? "~ estimated: filters hide part of each process's events, and its drops"
            : "~ estimated: the row's share of its process's figures, which are exact"
    }

    private func legend(_ table: Table) -> String {
        table == .processes && !filtered ? "EV/S, DROP/S, EVENTS, DROPS count missed events exactly (numbers, count files)" : estimateLegend
    }

    /// The keys, as long as the terminal allows.
    static func footer(width: Int) -> String {
        let long = "Keys: p ports, c processes, t threads; sort: r rate, n name, d drops, l p99, m msg/s, b B/s; i reverse; q quit"
        let short = "p ports c procs t threads | sort r rate n name d drops l p99 m b i | q quit"
        let shortest = "p c t: table  r n d l m b: sort  i: reverse  q: quit"
        return [long, short].first { $0.count <= width } ?? TopText.fit(shortest, width)
    }
}
