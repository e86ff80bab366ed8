import RunLoopKit

/// `portsniff --top`: the traffic of the last second as htop shows
/// processes: a header of totals, then one row per port (destination), per
/// process or per thread, sorted by rate, each with its events/s, messages/s,
/// bytes/s, drops/s, send-to-delivery latency p50 and p99, and totals.
///
/// Rates count the tap events this sniffer missed (drops): per process
/// exactly, as the growth of what the process owes it (`TapAccount`: its
/// numbers and count file); per port and per thread by estimate, the row's
/// events of each process scaled by that process's owed/seen ratio over the
/// second (and its drops by its dropped/seen ratio), so that a process's
/// rows add up to its own figures, shown with a `~` before the figure. With
/// filters, a process row shows only part of its events, so it is estimated
/// the same way. Drops are the events the numbers prove missed (gaps before
/// the last event received); what is owed beyond that is "not yet
/// received" (on its way, or missed after the last one), which the summary
/// at exit settles.
///
/// The model is fed the events shown (`add`), closed once a second (`tick`
/// live, `replay` per recorded second) and drawn as text: a screen that fits
/// a terminal (`screen`), or plain tables for a pipe (`plainText`). It does
/// no I/O.
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

    /// A row's figures for the last closed second.
    struct Figures {
        /// Events a second, counting those missed.
        var rate = 0.0
        /// Messages a second, of those seen.
        var messages = 0.0
        /// Data bytes a second, of the messages seen.
        var bytes = 0.0
        /// Events missed a second.
        var drops = 0.0
        /// Whether `rate` and `drops` are estimates (a figure scaled from
        /// what was seen; one not scaled is exact, and has no `~`).
        var rateEstimated = false
        var dropsEstimated = false
        var p50: Int64?
        var p99: Int64?
        /// Events since the row appeared, counting those missed; and those
        /// missed; each an estimate once a second of it was.
        var totalEvents: UInt64 = 0
        var totalDrops: UInt64 = 0
        var totalEventsEstimated = false
        var totalDropsEstimated = false

        var anyEstimated: Bool { rateEstimated || dropsEstimated || totalEventsEstimated || totalDropsEstimated }
    }

    /// What a row counted in the second being measured.
    private struct Window {
        var events = 0
        /// Events by the process that reported them: a port's events come
        /// from its senders and its receiver, each with its own drops.
        var eventsByProcess: [TapAccount.Process: Int] = [:]
        var messages = 0
        var bytes = 0
        var latencies: [Int64] = []
        /// The messages already counted: a message sent and delivered
        /// within one row counts once there.
        var traces: Set<UInt64> = []
    }

    /// One port, process or thread.
    private struct Row {
        var name: String
        /// Shown after the name when the column is wide enough: a thread's process.
        var context = ""
        /// The pid of a process row, the tid of a thread row.
        let id: Int32?
        var window = Window()
        var figures = Figures()
        /// Estimated totals, accumulated second by second.
        var estimatedEvents = 0.0
        var estimatedDrops = 0.0
        /// Closed seconds without an event.
        var idleSeconds = 0

        /// Counts one event of `process` in the second being measured.
        mutating func count(_ event: PortTapEvent, from process: TapAccount.Process) {
            window.events += 1
            window.eventsByProcess[process, default: 0] += 1
            if event.kind == .send || event.kind == .deliver, TopView.isNew(event.trace, in: &window.traces) {
                window.messages += 1
                window.bytes += event.dataBytes
            }
            if event.kind == .deliver, let latency = event.latency { window.latencies.append(latency) }
        }

        /// The figures measured from what was seen; rates and drops left at zero.
        func measured(seconds: Double) -> Figures {
            var figures = Figures()
            figures.messages = Double(window.messages) / seconds
            figures.bytes = Double(window.bytes) / seconds
            let sorted = window.latencies.sorted()
            func percentile(_ p: Double) -> Int64? {
                sorted.isEmpty ? nil : sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))]
            }
            figures.p50 = percentile(0.5)
            figures.p99 = percentile(0.99)
            return figures
        }

        /// Closes the second for a row whose rate is estimated: each process's
        /// events in it scaled by that process's ratios.
        mutating func estimate(seconds: Double, ratios: [TapAccount.Process: Ratios]) {
            var figures = measured(seconds: seconds)
            var scaled = 0.0, dropped = 0.0
            for (process, events) in window.eventsByProcess {
                let ratio = ratios[process] ?? Ratios()
                scaled += Double(events) * ratio.owed
                dropped += Double(events) * ratio.dropped
            }
            // Seen events alone are exact: only a process that owed more makes a figure an estimate.
            figures.rateEstimated = scaled > Double(window.events) + 0.5
            figures.dropsEstimated = dropped >= 0.5
            figures.rate = scaled / seconds
            figures.drops = dropped / seconds
            estimatedEvents += scaled
            estimatedDrops += dropped
            figures.totalEvents = UInt64(estimatedEvents.rounded())
            figures.totalDrops = UInt64(max(0, estimatedDrops).rounded())
            figures.totalEventsEstimated = self.figures.totalEventsEstimated || figures.rateEstimated
            figures.totalDropsEstimated = self.figures.totalDropsEstimated || figures.dropsEstimated
            idleSeconds = window.events > 0 ? 0 : idleSeconds + 1
            self.figures = figures
            window = Window()
        }

        /// Closes the second for a process row whose rate is exact: the
        /// growth of what it owes (`owed` in the second), and the events
        /// its numbers prove missed (`dropped` in the second); `mark`, where
        /// its account stands.
        mutating func settle(seconds: Double, owed: Int64, dropped: Int64, mark: AccountMark, exited: Bool) {
            var figures = measured(seconds: seconds)
            figures.rate = Double(owed) / seconds
            figures.drops = Double(dropped) / seconds
            figures.totalEvents = UInt64(mark.owed)
            figures.totalDrops = UInt64(mark.provenDropped)
            idleSeconds = owed > 0 || window.events > 0 ? 0 : idleSeconds + 1
            // An exited process leaves at once, as in htop.
            if exited && idleSeconds > 0 { idleSeconds = TopView.idleSecondsKept + 1 }
            self.figures = figures
            window = Window()
        }
    }

    /// A process's second, per event it received: what it owed (its
    /// rate, at least 1) and what its numbers prove missed. A row's
    /// events of the process, scaled by these, are its share of them, so
    /// that a process's rows add up to its own figures.
    private struct Ratios {
        var owed = 1.0
        var dropped = 0.0
    }

    private struct ThreadKey: Hashable {
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

    /// Where a process's account stood when the last second closed.
    /// `owed` comes from its count file too, so it runs ahead of what has
    /// arrived while events are on their way; `provenOwed` ends at the last
    /// event received, so `provenDropped` (the gaps before it) are events
    /// certainly missed.
    private struct AccountMark {
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

    /// A row that counted nothing this long leaves the table, as an exited
    /// process leaves htop's (an exited process's row at once).
    static let idleSecondsKept = 10

    var table: Table = .ports
    var order: Order = .rate
    var reversed = false
    /// Whether filters hide part of the processes' events, so that a
    /// process's rate is estimated as a port's is.
    let filtered: Bool

    private var ports: [String: Row] = [:]
    private var processes: [TapAccount.Process: Row] = [:]
    private var threads: [ThreadKey: Row] = [:]
    private var marks: [TapAccount.Process: AccountMark] = [:]
    private var messagesInWindow = 0
    private var tracesInWindow: Set<UInt64> = []
    private var totals = Totals()
    /// Seconds closed so far.
    private(set) var closedSeconds = 0

    /// Live: when the sniffer started and the last second closed (monotonic ns).
    private let startedAt: Int64
    private var lastTick: Int64?

    /// Replay: the recording's own account (gaps in the numbers, second by
    /// second), the start of the recorded second being measured, and the
    /// recording's first event.
    private var replayAccount = TapAccount()
    private var replaySecondStart: Int64?
    private var replayFirst: (monotonic: Int64, anchor: Int64)?

    init(filtered: Bool, startedAt: Int64) {
        self.filtered = filtered
        self.startedAt = startedAt
    }

    // MARK: - Counting

    /// Counts an event that passed the filters.
    mutating func add(_ event: PortTapEvent) {
        let process = TapAccount.Process(pid: event.pid, started: event.started)
        let isMessage = event.kind == .send || event.kind == .deliver
        // Not `trace.map { insert }`: a closure that mutates the set copies it, every event.
        if isMessage, Self.isNew(event.trace, in: &tracesInWindow) { messagesInWindow += 1 }
        let processName = event.process ?? "?"
        processes[process, default: Row(name: processName, id: event.pid)].count(event, from: process)
        let thread = ThreadKey(process: process, tid: event.tid)
        threads[thread, default: Row(name: "", id: event.tid)].count(event, from: process)
        // The thread's name may change (a loop named later): the latest shows.
        threads[thread]?.name = event.thread
        threads[thread]?.context = " (\(processName))"
        // Loop tracing's events have no port.
        if !event.destination.isEmpty {
            ports[event.destination, default: Row(name: event.destination, id: nil)].count(event, from: process)
        }
    }

    /// Whether a message is counted for the first time: one without a trace
    /// id cannot be matched, so it always is.
    fileprivate static func isNew(_ trace: UInt64?, in traces: inout Set<UInt64>) -> Bool {
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
    /// order, before it is shown. Returns the plain tables of the recorded
    /// second it ends, if it starts the next; seconds without an event are
    /// skipped.
    mutating func replay(_ event: PortTapEvent) -> String? {
        var tables: String?
        if let start = replaySecondStart {
            let elapsed = event.monotonicTime - start
            if elapsed >= 1_000_000_000 {
                tables = closeReplaySecond(end: start + 1_000_000_000)
                replaySecondStart = start + elapsed / 1_000_000_000 * 1_000_000_000
            }
        } else {
            replaySecondStart = event.monotonicTime
            replayFirst = (event.monotonicTime, event.time - event.monotonicTime)
        }
        _ = replayAccount.note(event)
        return tables
    }

    /// Replay: the tables of the last recorded second, if there was one.
    mutating func endReplay() -> String? {
        guard let start = replaySecondStart else { return nil }
        replaySecondStart = nil
        return closeReplaySecond(end: start + 1_000_000_000)
    }

    private mutating func closeReplaySecond(end: Int64) -> String {
        let first = replayFirst ?? (end, 0)
        close(seconds: 1, clock: end + first.anchor, uptime: end - first.monotonic, account: replayAccount)
        return plainText()
    }

    /// Turns the second's counts into figures, and starts the next.
    private mutating func close(seconds: Double, clock: Int64, uptime: Int64, account: TapAccount) {
        // A second cut short (at exit) still gives rates, not a division by zero.
        let seconds = max(seconds, 0.001)
        var ratios: [TapAccount.Process: Ratios] = [:]
        var exact: [TapAccount.Process: (owed: Int64, dropped: Int64, mark: AccountMark, exited: Bool)] = [:]
        for (process, entry) in account.entries where entry.owed > 0 {
            let before = marks[process] ?? AccountMark()
            let now = AccountMark(entry)
            marks[process] = now
            // An event counted missed may arrive after all (out of order):
            // a second never has negative drops.
            let owed = max(0, now.owed - before.owed), dropped = max(0, now.provenDropped - before.provenDropped)
            let seen = now.seen - before.seen
            if seen > 0 { ratios[process] = Ratios(owed: max(1, Double(owed) / Double(seen)), dropped: Double(dropped) / Double(seen)) }
            exact[process] = (owed, dropped, now, entry.exited)
        }

        var next = Totals(clock: clock, uptime: uptime)
        if !filtered {
            // Every process that owes the sniffer events this second has a row.
            for (process, owing) in exact where owing.owed > 0 && processes[process] == nil {
                processes[process] = Row(name: account.entries[process]?.name ?? "?", id: process.pid)
            }
        }
        for process in Array(processes.keys) {
            if !filtered, let owing = exact[process] {
                processes[process]!.settle(seconds: seconds, owed: owing.owed, dropped: owing.dropped, mark: owing.mark, exited: owing.exited)
            } else {
                processes[process]!.estimate(seconds: seconds, ratios: ratios)
            }
            let figures = processes[process]!.figures
            next.rate += figures.rate
            next.drops += figures.drops
            next.rateEstimated = next.rateEstimated || figures.rateEstimated
            next.dropsEstimated = next.dropsEstimated || figures.dropsEstimated
        }
        for key in Array(ports.keys) { ports[key]!.estimate(seconds: seconds, ratios: ratios) }
        for key in Array(threads.keys) { threads[key]!.estimate(seconds: seconds, ratios: ratios) }
        processes = processes.filter { $0.value.idleSeconds <= Self.idleSecondsKept }
        ports = ports.filter { $0.value.idleSeconds <= Self.idleSecondsKept }
        threads = threads.filter { $0.value.idleSeconds <= Self.idleSecondsKept }

        next.messages = Double(messagesInWindow) / seconds
        let standing = account.entries.values.map(AccountMark.init)
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
        let top = header().map { Self.fit($0, width) } + [""]
        let (titles, rows, _) = tableLines(table, width: width)
        let bottom = [legend(table), Self.footer(width: width)].map { Self.fit($0, width) }
        let room = max(0, height - top.count - 1 - bottom.count)
        var body = rows.isEmpty ? [closedSeconds == 0 ? "(measuring the first second)" : "(no traffic)"] : rows
        if !rows.isEmpty && body.count > room {
            let shown = max(0, room - 1)
            let cut = body.count - shown
            body = Array(body.prefix(shown)) + ["… \(cut) more row\(cut == 1 ? "" : "s") not shown (a taller terminal shows them)"]
        }
        // htop's bar of titles: the whole width in reverse video.
        let bar = colour ? "\u{1B}[7m" + titles + String(repeating: " ", count: max(0, width - titles.count)) + "\u{1B}[0m" : titles
        let lines = top + [bar] + body.map { Self.fit($0, width) } + bottom
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
            "portsniff --top - \(clock) up \(Self.uptime(totals.uptime)), \(plural(processes.count, "process")), "
                + "\(threads.count) thread\(threads.count == 1 ? "" : "s"), \(ports.count) port\(ports.count == 1 ? "" : "s")",
            "Rates:   \(Self.number(totals.rate, estimated: totals.rateEstimated)) events/s, \(Self.number(totals.messages)) messages/s, "
                + "\(Self.number(totals.drops, estimated: totals.dropsEstimated)) drops/s",
            "Sniffer: \(totals.received) received, \(totals.dropped) dropped (\(Self.percent(percent)))"
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
        return [long, short].first { $0.count <= width } ?? fit(shortest, width)
    }

    // MARK: - The table

    /// A column of the table, right-aligned but for the name.
    private struct Column {
        let title: String
        let width: Int
        let order: Order?
        var isName = false
        let text: (Row) -> String
    }

    /// The title row and the rows of `table`, sorted, fitted to `width`
    /// (nil: as wide as the names need).
    private func tableLines(_ table: Table, width: Int?) -> (titles: String, rows: [String], estimated: Bool) {
        let rows: [Row] = switch table {
        case .ports: Array(ports.values)
        case .processes: Array(processes.values)
        case .threads: Array(threads.values)
        }
        let nameTitle = switch table {
        case .ports: "PORT"
        case .processes: "PROCESS"
        case .threads: "THREAD"
        }
        var columns = Self.figureColumns
        if table != .ports {
            let digits = rows.map { "\($0.id ?? 0)".count }.max() ?? 0
            columns.insert(Column(title: table == .processes ? "PID" : "TID", width: max(3, digits), order: nil) { "\($0.id ?? 0)" }, at: 0)
        }
        let nameWidth: Int
        if let width {
            // A narrow terminal loses the columns least needed first, so that names stay readable.
            func room() -> Int { width - columns.reduce(0) { $0 + $1.width + 1 } }
            for title in ["DROPS", "P50", "EVENTS", "B/S", "MSG/S", "P99", "DROP/S", "PID", "TID"] where room() < Self.minimumNameWidth {
                columns.removeAll { $0.title == title }
            }
            nameWidth = max(1, room())
        } else {
            nameWidth = min(Self.plainNameWidth, max(nameTitle.count + 1, rows.map { $0.name.count + $0.context.count }.max() ?? 0))
        }
        let nameColumn = Column(title: nameTitle, width: nameWidth, order: .name, isName: true) { row in
            row.name.count + row.context.count <= nameWidth ? row.name + row.context : row.name
        }
        // After the PID or TID, if a narrow terminal left it.
        let hasID = columns.first.map { $0.title == "PID" || $0.title == "TID" } ?? false
        columns.insert(nameColumn, at: hasID ? 1 : 0)
        func line(_ cells: [String]) -> String {
            let text = zip(columns, cells).map { column, cell in
                column.isName ? Self.pad(Self.fit(cell, column.width), column.width) : Self.padLeft(cell, column.width)
            }.joined(separator: " ")
            return Self.trimmed(width.map { Self.fit(text, $0) } ?? text)
        }
        // The sorted column's title carries an arrow: ▼ highest (or Z) first, ▲ lowest (or A).
        let arrow = (order == .name) != reversed ? "▲" : "▼"
        let titles = line(columns.map { $0.order == order ? $0.title + arrow : $0.title })
        let estimated = rows.contains { $0.figures.anyEstimated }
        return (titles, sortedRows(rows).map { row in line(columns.map { $0.text(row) }) }, estimated)
    }

    private static let minimumNameWidth = 10
    private static let plainNameWidth = 40

    private static var figureColumns: [Column] {
        [
            Column(title: "EV/S", width: 7, order: .rate) { number($0.figures.rate, estimated: $0.figures.rateEstimated) },
            Column(title: "MSG/S", width: 6, order: .messages) { number($0.figures.messages) },
            Column(title: "B/S", width: 6, order: .bytes) { number($0.figures.bytes) },
            Column(title: "DROP/S", width: 7, order: .drops) { number($0.figures.drops, estimated: $0.figures.dropsEstimated) },
            Column(title: "P50", width: 6, order: nil) { latency($0.figures.p50) },
            Column(title: "P99", width: 6, order: .latency) { latency($0.figures.p99) },
            Column(title: "EVENTS", width: 7, order: nil) { number(Double($0.figures.totalEvents), estimated: $0.figures.totalEventsEstimated) },
            Column(title: "DROPS", width: 7, order: nil) { number(Double($0.figures.totalDrops), estimated: $0.figures.totalDropsEstimated) },
        ]
    }

    private func sortedRows(_ rows: [Row]) -> [Row] {
        func key(_ row: Row) -> Double? {
            switch order {
            case .rate: row.figures.rate
            case .drops: row.figures.drops
            case .latency: row.figures.p99.map(Double.init)
            case .messages: row.figures.messages
            case .bytes: row.figures.bytes
            case .name: nil
            }
        }
        let sorted = rows.sorted { lhs, rhs in
            if order != .name {
                let left = key(lhs) ?? -1, right = key(rhs) ?? -1
                // Rounded as shown, so that rows showing one figure stay in name order.
                if left.rounded() != right.rounded() { return left.rounded() > right.rounded() }
            }
            return (lhs.name + lhs.context, lhs.id ?? 0) < (rhs.name + rhs.context, rhs.id ?? 0)
        }
        return reversed ? sorted.reversed() : sorted
    }

    // MARK: - Text

    /// `count` in at most 6 characters (then k, M, G), rounded; `~` before an estimate.
    static func number(_ value: Double, estimated: Bool = false) -> String {
        let rounded = value.rounded()
        let text: String
        if rounded < 100_000 {
            text = "\(Int(rounded))"
        } else {
            let (scaled, unit) = rounded < 1e8 ? (rounded / 1e3, "k") : rounded < 1e11 ? (rounded / 1e6, "M") : (rounded / 1e9, "G")
            text = scaled < 1_000 ? "\(Double(Int(scaled * 10)) / 10)\(unit)" : "\(Int(scaled))\(unit)"
        }
        return (estimated ? "~" : "") + text
    }

    /// A latency in at most 6 characters: `850ns`, `44.6µs`, `358µs`, `1.2ms`, `2.5s`; `-` for none.
    static func latency(_ nanoseconds: Int64?) -> String {
        guard let value = nanoseconds else { return "-" }
        func scaled(_ unit: Double, _ suffix: String) -> String {
            let amount = Double(value) / unit
            return amount < 100 ? "\(Double(Int(amount * 10)) / 10)\(suffix)" : "\(Int(amount))\(suffix)"
        }
        if value < 1_000 { return "\(value)ns" }
        if value < 1_000_000 { return scaled(1e3, "µs") }
        if value < 1_000_000_000 { return scaled(1e6, "ms") }
        return scaled(1e9, "s")
    }

    static func uptime(_ nanoseconds: Int64) -> String {
        let seconds = max(0, nanoseconds / 1_000_000_000)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let days = seconds / 86_400
        let clock = "\(seconds / 3_600 % 24):\(two(seconds / 60 % 60)):\(two(seconds % 60))"
        return days > 0 ? "\(days)d \(clock)" : clock
    }

    private static func percent(_ value: Double) -> String { "\(Double(Int((value * 10).rounded())) / 10)%" }

    /// A line cut to `width` columns, `…` where it was cut.
    static func fit(_ line: String, _ width: Int) -> String {
        line.count <= width ? line : String(line.prefix(max(0, width - 1))) + (width > 0 ? "…" : "")
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    private static func padLeft(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    private static func trimmed(_ line: String) -> String {
        var line = line
        while line.last == " " { line.removeLast() }
        return line
    }
}
