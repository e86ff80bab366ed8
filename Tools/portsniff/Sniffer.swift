import ArgumentParser
import Glibc
import RunLoopKit

/// The sniffer's state. It lives on the main thread's run loop: the tap
/// socket, the stats timer and the Ctrl-C pipe are sources of that loop.
final class Sniffer: @unchecked Sendable {
    // @unchecked Sendable: used only on the main thread (its loop's callouts
    // run there).
    enum View { case live, json, stats, top, none }

    private let filter: EventFilter
    private let view: View
    /// The niceness of the thread that handles the events (--nice).
    let niceness: Int32
    private var live: LiveView
    private let limit: Int?
    private var matcher = LatencyMatcher()
    private var statsView = StatsView()
    private var summary = SniffSummary()
    private var shown = 0
    /// Where --write records go (a file, or standard output for `-`).
    private var recording: RecordWriter?
    /// Or the trace --write --format trace writes.
    private var traceWriter: TraceEventWriter?
    private let windowMilliseconds: Int
    /// Batches that were not the tap's format (skipped).
    private var malformedBatches = 0
    private var lastTable = MonotonicNow.nanoseconds()
    /// The count files' directory, when listening in the readers' directory mode.
    private var countsDirectory: String?
    /// The time of the latest event taken from the reader.
    private var newestTaken = Int64.min
    /// Takes what waits in the socket (set while listening).
    private var pendingReceiver: (() -> Void)?
    /// The program run after `--`, if any.
    private var traced: TracedCommand?
    /// Its exit status, once the sniffer stopped because it exited.
    var commandStatus: Int32? { traced?.reapIfExited() == true ? traced?.status : nil }
    /// Puts events in time order before they are shown (--window).
    private var reorder: ReorderBuffer
    private var releaseTimerSet = false
    private var listeningLoop: RunLoop?
    /// Per process, events its numbers proved missed, not yet counted by
    /// --top (they go with the process's next event shown).
    private var pendingMissed: [TapAccount.Process: UInt64] = [:]
    /// The account's drops when the last --stats table was drawn.
    private var droppedAtLastTable: UInt64 = 0
    /// --json's lines.
    private let jsonLines = RecordWriter(fd: 1)
    /// --top's figures, and its terminal when the output is one.
    private var top: TopView
    private var topScreen: TopTerminal?
    /// The live view's limit of lines a second (--max-rate).
    private var gate: RateGate
    /// The live view's default limit on a terminal: a screenful a second
    /// or so is what a reader can follow.
    static let terminalMaxLinesPerSecond = 200

    init(
        filter: EventFilter, view: View, live: LiveView, limit: Int?, windowMilliseconds: Int, maxLinesPerSecond: Int = 0,
        niceness: Int32
    ) {
        self.niceness = niceness
        gate = RateGate(maxLinesPerSecond: maxLinesPerSecond)
        self.filter = filter
        self.view = view
        self.live = live
        self.limit = limit
        self.windowMilliseconds = windowMilliseconds
        reorder = ReorderBuffer(windowMilliseconds: windowMilliseconds)
        top = TopView(filtered: !filter.isEmpty, startedAt: MonotonicNow.nanoseconds())
        summary.showsProcess = { [filter] process, name in filter.acceptsProcess(pid: process.pid, name: name) }
    }

    // MARK: - Sources of events

    /// Listens on `endpoint`. In the readers' directory (the default), the
    /// processes' count files say what this sniffer is owed; on an
    /// endpoint of its own, only the numbers of what arrives do.
    func listen(
        on endpoint: String?, recordingTo path: String?, asTrace: Bool = false, running command: [String] = [], tracingLoops: Bool = false
    ) throws {
        if let path {
            let fd = path == "-" ? 1 : open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw ValidationError("cannot open \(path) for writing: \(String(cString: strerror(errno)))") }
            if asTrace {
                traceWriter = TraceEventWriter(fd: fd)
            } else {
                recording = RecordWriter(fd: fd)
                recording?.writeHeader(RecordingHeader(sorted: windowMilliseconds > 0, windowMilliseconds: windowMilliseconds))
            }
        }
        // A socket of this sniffer's own in the readers' directory (files
        // 0600, removed when it stops), or the endpoint given.
        let reader = try PortTapReader(endpoint: endpoint)
        defer { reader.close() }
        let loop = RunLoop.current
        listeningLoop = loop
        // Attached: the processes already tapped owe the events after their
        // counts now (S-TAP-1); their count files are read again every
        // second, and at the end.
        countsDirectory = endpoint == nil ? try? PortTap.countsDirectory() : nil
        if countsDirectory != nil { summary.account.attach((try? PortTap.processCounts()) ?? []) }
        let source = reader.makeSource { [self] reader in
            if receivePending(from: reader) { finish(loop) }
        }
        pendingReceiver = { [self] in
            _ = receivePending(from: reader, all: true)
            // A program that exited has passed its last events to the
            // socket, and its count file says how many: wait for them (1 s
            // at most), so that the summary does not count events still on
            // their way as dropped.
            guard traced != nil else { return }
            let deadline = MonotonicNow.nanoseconds() + 1_000_000_000
            readCounts()
            while !summary.account.isSettled && MonotonicNow.nanoseconds() < deadline {
                take(from: reader, waiting: 0.02)
                readCounts()
            }
        }
        try loop.add(source, forMode: .default)
        if countsDirectory != nil {
            let counts = try Timer(timeInterval: 1, repeats: true) { [self] _ in readCounts() }
            loop.add(counts, forMode: .default)
        }
        if view == .stats {
            let timer = try Timer(timeInterval: 1, repeats: true) { [self] _ in printTable() }
            loop.add(timer, forMode: .default)
        }
        if view == .live && gate.maxLinesPerSecond > 0 {
            // A summary also when the traffic stops in the middle of a busy second.
            let timer = try Timer(timeInterval: 1, repeats: true) { [self] _ in
                if let note = gate.tick(now: MonotonicNow.nanoseconds()) { emit(live.note(note)) }
            }
            loop.add(timer, forMode: .default)
        }
        try catchInterrupt(on: loop)
        standardError("portsniff: listening on \(reader.endpoint)\n")
        if view == .json { jsonLines.writeHeader(RecordingHeader(sorted: windowMilliseconds > 0, windowMilliseconds: windowMilliseconds)) }
        if view == .live, let header = live.header() { emit(header) }
        if view == .top { try startTop(on: loop) }
        // Started once this sniffer listens, so that it is owed every event.
        if !command.isEmpty { traced = try TracedCommand(command, traceLoops: tracingLoops) }
        yieldToTheTraffic()
        loop.runUntilStopped()
        if let recording, recording.fd != 1 { close(recording.fd) }
        traceWriter?.finish()
        if let traceWriter, traceWriter.fd != 1 { close(traceWriter.fd) }
    }

    /// Takes the batches the reader holds; true when --count is reached.
    /// At most `batchesPerCallout` at a time (the reader's source calls
    /// again for the rest), so that a producer faster than the sniffer does
    /// not keep it in one callout, its timers (--stats, --top), keys and
    /// Ctrl-C starved. With `all` (at the end), every batch of events that
    /// happened before now: a producer still running would otherwise keep
    /// it here for ever.
    private func receivePending(from reader: PortTapReader, all: Bool = false) -> Bool {
        let now = MonotonicNow.nanoseconds()
        var taken = 0
        while all ? newestTaken <= now : taken < Self.batchesPerCallout, take(from: reader, waiting: nil) { taken += 1 }
        return releaseDue()
    }

    private static let batchesPerCallout = 64

    /// Takes one batch (waiting up to `waiting` seconds); false when none came.
    @discardableResult
    private func take(from reader: PortTapReader, waiting timeout: Double?) -> Bool {
        let now = MonotonicNow.nanoseconds()
        do {
            guard let batch = try reader.receive(timeout: timeout) else { return false }
            for event in batch.events {
                account(event)
                reorder.add(event, now: now)
                newestTaken = max(newestTaken, event.monotonicTime)
            }
        } catch {
            malformedBatches += 1
            if malformedBatches == 1 { standardError("portsniff: skipped a batch that is not the tap's format: \(error)\n") }
        }
        return true
    }

    /// Shows the events the reorder window lets out now (all of them with
    /// `all`), in time order, and arms a timer for the next; true when
    /// --count is reached.
    private func releaseDue(all: Bool = false) -> Bool {
        for (released, late) in reorder.release(now: MonotonicNow.nanoseconds(), all: all) {
            var event = released
            matcher.match(&event)
            if late { event.late = true }
            // Recorded in time order, before the filters.
            recording?.write(event)
            traceWriter?.add(event)
            if show(event) { return true }
        }
        armReleaseTimer()
        return false
    }

    /// A one-shot timer for the first waiting event, unless one is set.
    private func armReleaseTimer() {
        guard !releaseTimerSet, let due = reorder.nextDue, let loop = listeningLoop else { return }
        releaseTimerSet = true
        let delay = Double(max(0, due - MonotonicNow.nanoseconds())) / 1e9
        _ = try? loop.perform(afterDelay: delay) { [self] in
            releaseTimerSet = false
            if releaseDue() { finish(loop) }
        }
    }

    /// The processes' count files: what each has passed on by now.
    private func readCounts() {
        guard countsDirectory != nil, let counts = try? PortTap.processCounts() else { return }
        summary.account.update(counts)
    }

    func replay(path: String) throws {
        let name = path == "-" ? "standard input" : path
        let fd = path == "-" ? 0 : open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ValidationError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { if fd != 0 { close(fd) } }
        var status = stat()
        if fstat(fd, &status) == 0 && (status.st_mode & S_IFMT) == S_IFDIR {
            throw RecordReader.Failure(description: "\(path) is a directory, not a recording (--read takes a file --write made)")
        }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count < 0 && errno == EINTR { continue }
            if count < 0 { throw ValidationError("cannot read \(path): \(String(cString: strerror(errno)))") }
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        // A file that is not a recording is an error, not "0 events".
        let file = try RecordReader.read(bytes, path: name)
        if let cut = file.cutAt {
            standardError("portsniff: \(name) is cut short: read up to its \(cut), the rest is not a whole line\n")
        }
        if view == .json { jsonLines.writeHeader(file.header) }
        if view == .live, let header = live.header() { emit(header) }
        // Shown in time order, as live (a recording made without a window is in arrival order).
        let ordered = file.header.sorted ? file.events : file.events.enumerated().sorted {
            ($0.element.monotonicTime, $0.offset) < ($1.element.monotonicTime, $1.offset)
        }.map(\.element)
        // What each process owed and missed, from its numbers in the order
        // it gave them, not the order they show in (S-TAP-1).
        let gaps = RecordingGaps(ordered, accounts: file.accounts)
        summary.account = TapAccount(replaying: gaps.firstOwed)
        var lastTime: Int64?
        for (index, recorded) in ordered.enumerated() {
            var event = recorded
            if view == .stats, statsView.isDue(at: event.monotonicTime) {
                emitStatsTable(seconds: 1, clock: TimeStamper.clock(event.time))
            }
            if view == .top, let tables = top.replay(event, account: summary.account) { emit(tables) }
            account(event, missedBefore: gaps.missedBefore[index])
            lastTime = event.time
            // Latencies are measured again (a recording keeps them, but filters may differ).
            event.latency = nil
            matcher.match(&event)
            if show(event) { break }
        }
        // What the recording's writer knew at its end: events missed after the last one recorded.
        summary.account.settle(with: file.accounts)
        if view == .live { flushGate(now: lastTime.map { _ in MonotonicNow.nanoseconds() }) }
        if view == .stats, let lastTime { emitStatsTable(seconds: 1, clock: TimeStamper.clock(lastTime), final: true) }
        if view == .top, let tables = top.endReplay(account: summary.account) { emit(tables) }
        summary.cutAt = file.cutAt
        standardError(summary.text + "\n")
    }

    // MARK: - Events

    /// Counts one event as it arrives, in the order of its process's
    /// numbers, shown or not: its number says what was missed before it
    /// (S-TAP-1).
    private func account(_ event: PortTapEvent, missedBefore: UInt64? = nil) {
        let newDrops = summary.account.note(event, missedBefore: missedBefore)
        guard newDrops > 0 else { return }
        pendingMissed[TapAccount.Process(pid: event.pid, started: event.started), default: 0] += newDrops
        traceWriter?.addMissed(newDrops, pid: event.pid, at: event.monotonicTime)
        if view == .live, filter.acceptsProcess(pid: event.pid, name: event.process) {
            emit(live.dropLine(pid: event.pid, newDrops: newDrops, total: summary.account.totalDropped))
        }
    }

    /// Shows one event, in time order; true when --count is reached.
    private func show(_ event: PortTapEvent) -> Bool {
        guard filter.accepts(event) else { return false }
        summary.add(event)
        switch view {
        case .live:
            let (admitted, note) = gate.admit(event, now: MonotonicNow.nanoseconds())
            if let note { emit(live.note(note)) }
            if admitted { emit(live.line(for: event, late: event.late == true)) } else { summary.onlyCounted += 1 }
        case .json:
            emit(jsonLines.line(event))
        case .stats:
            statsView.add(event)
        case .top:
            let process = TapAccount.Process(pid: event.pid, started: event.started)
            top.add(event, missed: pendingMissed.removeValue(forKey: process) ?? 0)
        case .none:
            break
        }
        shown += 1
        if let limit, shown >= limit { return true }
        return false
    }

    private func printTable(final: Bool = false) {
        let now = MonotonicNow.nanoseconds()
        let seconds = Double(now - lastTable) / 1e9
        lastTable = now
        emitStatsTable(seconds: seconds, clock: TimeStamper.clock(Int64(Date().timeIntervalSince1970 * 1e9)),
                       clearing: live.colour, final: final)
    }

    /// A --stats table, with the tap events missed since the last one and
    /// in all: proven by the numbers while events come, and at the end
    /// (`final`) as the account settles it, so that the tables add up to
    /// the summary.
    private func emitStatsTable(seconds: Double, clock: String, clearing: Bool = false, final: Bool = false) {
        let dropped = final ? summary.account.totalDropped : summary.account.totalMissed
        let table = statsView.table(seconds: seconds, clock: clock, dropped: dropped - min(dropped, droppedAtLastTable), droppedInAll: dropped)
        droppedAtLastTable = dropped
        emit((clearing ? "\u{1B}[H\u{1B}[2J" : "") + table)
    }

    /// The rate gate's last note, if a busy stretch was under way.
    private func flushGate(now: Int64?) {
        if let now, let last = gate.flush(now: now) { emit(live.note(last)) }
    }

    private func finish(_ loop: RunLoop) {
        // The shell's screen first: what follows may take a while.
        topScreen?.leave()
        // What is still queued for this sniffer, and what waits in the
        // reorder window, is shown first (unless --count was reached), then
        // the counts are read a last time, so that the summary adds up:
        // received + dropped = owed.
        if let limit, shown >= limit {} else {
            pendingReceiver?()
            _ = releaseDue(all: true)
        }
        if view == .live { flushGate(now: MonotonicNow.nanoseconds()) }
        summary.lateCount = reorder.lateCount
        summary.malformedBatches = malformedBatches
        readCounts()
        // A recording ends with what this sniffer was owed and missed, so that --read reports the same.
        for line in summary.account.recordedAccounts { recording?.write(AccountLine(account: line)) }
        if view == .stats { printTable(final: true) }
        if view == .top { finishTop() }
        standardError(summary.text + "\n")
        loop.stop()
    }

    // MARK: - The top view

    /// On a terminal, the full screen, redrawn every second and on a key;
    /// otherwise plain tables every second.
    private func startTop(on loop: RunLoop) throws {
        if isatty(1) == 1 {
            let screen = TopTerminal()
            topScreen = screen
            screen.onResume = { [self] in drawTop() }
            screen.enter()
            try screen.readKeys(on: loop) { [self] keys in
                for key in keys {
                    switch top.press(key) {
                    // q does what Ctrl-C does: the same signal, through the same pipe.
                    case .quit: raise(SIGINT)
                    case .redraw: drawTop()
                    case .none: break
                    }
                }
            }
            drawTop()
        }
        let timer = try Timer(timeInterval: 1, repeats: true) { [self] _ in tickTop() }
        loop.add(timer, forMode: .default)
    }

    /// Closes the second: the counts files read first, so that what the
    /// processes owe is up to date.
    private func tickTop() {
        readCounts()
        top.tick(now: MonotonicNow.nanoseconds(), wallTime: Int64(Date().timeIntervalSince1970 * 1e9), account: summary.account)
        if topScreen != nil { drawTop() } else { emit(top.plainText()) }
    }

    private func drawTop() {
        guard let topScreen else { return }
        topScreen.draw(top.screen(width: topScreen.columns, height: topScreen.rows, colour: live.colour))
    }

    /// In a pipe, the tables of the part of a second since the last.
    private func finishTop() {
        if topScreen == nil { tickTop() }
    }

    // MARK: - Ctrl-C

    /// SIGINT, SIGTERM, SIGWINCH and SIGCHLD write a byte into a pipe whose
    /// read end is a source of the loop: the summary is printed, a new width
    /// taken, a signal passed on to the program run after `--`, from the
    /// loop, not from the handler.
    private func catchInterrupt(on loop: RunLoop) throws {
        var fds: [Int32] = [0, 0]
        guard pipe(&fds) == 0 else { throw ValidationError("pipe: \(String(cString: strerror(errno)))") }
        interruptWriteEnd = fds[1]
        // One handler for all four: it writes the signal's number, which
        // the loop reads (a C handler captures nothing).
        for caught in [SIGINT, SIGTERM, SIGWINCH, SIGCHLD] {
            signal(caught) { number in
                var byte = UInt8(truncatingIfNeeded: number)
                _ = Glibc.write(interruptWriteEnd, &byte, 1)
            }
        }
        let source = SocketSource(fileDescriptor: fds[0]) { [self] source, fd in
            var byte: UInt8 = 0
            _ = Glibc.read(fd, &byte, 1)
            let caught = Int32(byte)
            // The terminal was resized: the live view takes the new width.
            if caught == SIGWINCH {
                live.width = LiveView.terminalWidth(1)
                if let topScreen { topScreen.updateSize(); drawTop() }
                return
            }
            if let traced {
                // With a program running, Ctrl-C and SIGTERM are its: the
                // sniffer stops when the program has exited (SIGCHLD).
                if caught == SIGINT || caught == SIGTERM { traced.forward(caught) }
                guard traced.reapIfExited() else { return }
            } else if caught == SIGCHLD {
                return
            }
            source.invalidate()
            finish(loop)
        }
        try loop.add(source, forMode: .default)
    }
}

/// Written by the SIGINT handler, which cannot capture anything.
nonisolated(unsafe) var interruptWriteEnd: Int32 = -1
