import ArgumentParser
import Glibc
import RunLoopKit
import ZeroMQ

/// portsniff: shows the port traffic of processes whose tap is on
/// (RUNLOOPKIT_TAP=1), live, filtered, as statistics or JSON, and records
/// and replays it.
@main
struct PortSniff: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "portsniff",
        abstract: "Show RunLoopKit port traffic live: every send and delivery of processes started with RUNLOOPKIT_TAP=1.",
        discussion: """
            Start it before or after the processes it watches. Filters combine: an event is shown when it \
            matches every filter given; several values of one filter match any of them. Ctrl-C prints a summary.
            """)

    // Each option names what it takes (N, ID, NAME, FILE...): by default
    // ArgumentParser shows the property's name, e.g. `--write <write>`.
    @Option(help: ArgumentHelp("The tap endpoint to listen on (default: a socket of this sniffer's own in <runtime dir>/tap/, where RUNLOOPKIT_TAP=1 reports to every sniffer, each seeing everything).", valueName: "ENDPOINT"))
    var endpoint: String?

    @Option(name: .customLong("msgid"), help: ArgumentHelp("Only messages with this msgid (repeatable).", valueName: "ID"))
    var msgids: [UInt32] = []

    @Option(name: .customLong("port"), help: ArgumentHelp("Only messages from or to this port: a registered name, or <pid>/<port id> (repeatable).", valueName: "NAME"))
    var ports: [String] = []

    @Option(name: .customLong("thread"), help: ArgumentHelp("Only events on this thread name (repeatable).", valueName: "NAME"))
    var threads: [String] = []

    @Option(name: .customLong("pid"), help: ArgumentHelp("Only events of this process (repeatable).", valueName: "PID"))
    var pids: [Int32] = []

    @Option(help: ArgumentHelp("Show the first N bytes of each data component, in hex (the tap sends RUNLOOPKIT_TAP_BYTES, default 16).", valueName: "N"))
    var hex: Int?

    @Flag(help: "A table refreshed every second: per port and msgid, messages/s, bytes/s, latency p50/p99, drops.")
    var stats = false

    @Flag(help: "JSON Lines: one object per event.")
    var json = false

    @Option(help: ArgumentHelp("Record every event received (before filters) to FILE, as JSON Lines, in time order (see --window).", valueName: "FILE"))
    var write: String?

    @Option(help: ArgumentHelp("Replay FILE, a recording made with --write, through the same filters and views, instead of listening.", valueName: "FILE"))
    var read: String?

    @Option(help: ArgumentHelp("Exit after N events (after filters).", valueName: "N"))
    var count: Int?

    @Option(help: ArgumentHelp("Hold each event up to MS milliseconds so that events show, and --write records them, in time order; one later than that shows at once, marked late (default: 50; 0: as they arrive).", valueName: "MS"))
    var window = 50

    @Flag(name: .customLong("no-color"), help: "No colour (also when NO_COLOR is set or output is not a terminal).")
    var noColor = false

    @Argument(parsing: .postTerminator, help: ArgumentHelp("After --: a program to run with the tap on (RUNLOOPKIT_TAP=1), as strace runs one; portsniff passes SIGINT and SIGTERM on to it, stops when it exits, and exits with its status.", valueName: "COMMAND"))
    var command: [String] = []

    func validate() throws {
        if let count, count <= 0 { throw ValidationError("--count must be above zero") }
        if let hex, hex < 0 { throw ValidationError("--hex must not be negative") }
        if window < 0 { throw ValidationError("--window must not be negative") }
        if stats && json { throw ValidationError("--stats and --json are two views: choose one") }
        if read != nil && write != nil { throw ValidationError("--read replays a recording; --write records live traffic: choose one") }
        if !command.isEmpty && (read != nil || endpoint != nil) {
            throw ValidationError("-- COMMAND runs a program that reports to the readers' directory: not with --read or --endpoint")
        }
    }

    func run() throws {
        let colour = !noColor && getenv("NO_COLOR") == nil && isatty(1) == 1
        let sniffer = Sniffer(
            filter: EventFilter(msgids: Set(msgids), ports: Set(ports), threads: Set(threads), pids: Set(pids)),
            view: json ? .json : (stats ? .stats : .live), live: LiveView(colour: colour, hexBytes: hex, width: LiveView.terminalWidth(1)),
            limit: count, windowMilliseconds: window)
        if let read {
            try sniffer.replay(path: read)
            return
        }
        let target = try endpoint ?? PortTap.readerEndpoint()
        try sniffer.listen(on: target, inReadersDirectory: endpoint == nil, recordingTo: write, running: command)
        if let status = sniffer.commandStatus { throw ExitCode(status) }
    }
}

/// The sniffer's state. It lives on the main thread's run loop: the tap
/// socket, the stats timer and the Ctrl-C pipe are sources of that loop.
final class Sniffer: @unchecked Sendable {
    // @unchecked Sendable: used only on the main thread (its loop's callouts
    // run there).
    enum View { case live, json, stats }

    private let filter: EventFilter
    private let view: View
    private var live: LiveView
    private let limit: Int?
    private var matcher = LatencyMatcher()
    private var statsView = StatsView()
    private var summary = SniffSummary()
    private var shown = 0
    private var recording: Int32 = -1
    private let decoder = JSONDecoder()
    private var lastTable = MonotonicNow.nanoseconds()
    /// The count files' directory, when listening in the readers' directory mode.
    private var countsDirectory: String?
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
    /// Drops found since the stats view last took them.
    private var pendingDrops: UInt64 = 0
    /// Events as --json and --write write them: keys sorted, slashes as they are.
    private let recordEncoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()
    private let names = ProcessNames()

    init(filter: EventFilter, view: View, live: LiveView, limit: Int?, windowMilliseconds: Int) {
        self.filter = filter
        self.view = view
        self.live = live
        self.limit = limit
        reorder = ReorderBuffer(windowMilliseconds: windowMilliseconds)
    }

    // MARK: - Sources of events

    /// Listens on `endpoint`. In the readers' directory (the default), the
    /// processes' count files say what this sniffer is owed; on an
    /// endpoint of its own, only the numbers of what arrives do.
    func listen(on endpoint: String, inReadersDirectory: Bool, recordingTo path: String?, running command: [String] = []) throws {
        if let path {
            recording = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard recording >= 0 else { throw ValidationError("cannot open \(path) for writing: \(String(cString: strerror(errno)))") }
        }
        let socket = try ZMQContext.shared.makeSocket(.pull)
        try socket.setLinger(milliseconds: 0)
        // An ipc socket file readable and writable by this user only, as
        // the docs state (the process is single-threaded here, so the
        // umask's change is seen by nothing else), and removed at the end.
        let previousMask = umask(0o177)
        defer { _ = umask(previousMask) }
        try socket.bind(endpoint)
        _ = umask(previousMask)
        let socketFile = endpoint.hasPrefix("ipc://") ? String(endpoint.dropFirst("ipc://".count)) : nil
        defer { if let socketFile { unlink(socketFile) } }
        let loop = RunLoop.current
        listeningLoop = loop
        // Attached: the processes already tapped owe the events after their
        // counts now (S-TAP-1); their count files are read again every
        // second, and at the end.
        countsDirectory = inReadersDirectory ? try? PortTap.countsDirectory() : nil
        if countsDirectory != nil { summary.account.attach((try? PortTap.processCounts()) ?? []) }
        let source = SocketSource(socket: socket) { [self] _, socket in
            if receivePending(from: socket) { finish(loop) }
        }
        pendingReceiver = { [self] in
            _ = receivePending(from: socket)
            // A program that exited has passed its last events to the
            // socket, and its count file says how many: wait for them (1 s
            // at most), so that the summary does not count events still on
            // their way as dropped.
            guard traced != nil else { return }
            let deadline = MonotonicNow.nanoseconds() + 1_000_000_000
            try? socket.setReceiveTimeout(milliseconds: 20)
            readCounts()
            while !summary.account.isSettled && MonotonicNow.nanoseconds() < deadline {
                if let frames = try? socket.receiveMultipart(), let line = frames.first,
                   let event = try? decoder.decode(PortTapEvent.self, from: line) {
                    account(event)
                    reorder.add(event, now: MonotonicNow.nanoseconds())
                }
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
        try catchInterrupt(on: loop)
        standardError("portsniff: listening on \(endpoint)\n")
        if view == .live, let header = live.header() { emit(header) }
        // Started once this sniffer listens, so that it is owed every event.
        if !command.isEmpty { traced = try TracedCommand(command) }
        loop.runUntilStopped()
        socket.close()
        if recording >= 0 { close(recording) }
    }

    /// Takes every event waiting in the socket; true when --count is reached.
    private func receivePending(from socket: Socket) -> Bool {
        let now = MonotonicNow.nanoseconds()
        while let frames = try? socket.receiveMultipart(dontWait: true) {
            guard let line = frames.first, let event = try? decoder.decode(PortTapEvent.self, from: line) else { continue }
            account(event)
            reorder.add(event, now: now)
        }
        return releaseDue()
    }

    /// Shows the events the reorder window lets out now (all of them with
    /// `all`), in time order, and arms a timer for the next; true when
    /// --count is reached.
    private func releaseDue(all: Bool = false) -> Bool {
        for (event, late) in reorder.release(now: MonotonicNow.nanoseconds(), all: all) {
            // Recorded as shown, in time order, before the filters.
            if recording >= 0, var line = try? recordEncoder.encode(event) {
                line.append(UInt8(ascii: "\n"))
                writeAll(recording, Array(line))
            }
            if show(event, late: late) { return true }
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
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ValidationError("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[..<count]
        }
        var lastTime: Int64?
        var events: [PortTapEvent] = []
        if view == .live, let header = live.header() { emit(header) }
        for (index, line) in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() where !line.isEmpty {
            // A file that is not a recording is an error, not "0 events".
            guard let event = try? decoder.decode(PortTapEvent.self, from: Data(line)) else {
                throw ValidationError("\(path):\(index + 1): not a portsniff recording (--write writes one JSON event per line)")
            }
            account(event)
            events.append(event)
        }
        // Shown in time order, as live (the file is in the order events arrived).
        for event in events.enumerated().sorted(by: { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }).map(\.element) {
            if view == .stats, statsView.isDue(at: event.time) {
                emit(statsView.table(seconds: 1, clock: LiveView.clock(event.time)))
            }
            lastTime = event.time
            if show(event, late: false) { break }
        }
        if view == .stats, let lastTime { emit(statsView.table(seconds: 1, clock: LiveView.clock(lastTime))) }
        standardError(summary.text + "\n")
    }

    // MARK: - Events

    /// Counts one event as it arrives, in the order of its process's
    /// numbers, shown or not: its number says what was missed before it
    /// (S-TAP-1).
    private func account(_ event: PortTapEvent) {
        let newDrops = summary.account.note(event)
        pendingDrops += newDrops
        if newDrops > 0, view == .live {
            emit(live.dropLine(pid: event.pid, newDrops: newDrops, total: summary.account.totalDropped))
        }
    }

    /// Shows one event, in time order; true when --count is reached.
    private func show(_ event: PortTapEvent, late: Bool) -> Bool {
        let latency = matcher.match(event)
        guard filter.accepts(event) else { return false }
        summary.add(event, latency: latency)
        switch view {
        case .live:
            emit(live.line(for: event, latency: latency, process: names.name(of: event.pid), late: late))
        case .json:
            emit(json(event, latency: latency, late: late))
        case .stats:
            statsView.add(event, latency: latency, newDrops: pendingDrops)
            pendingDrops = 0
        }
        shown += 1
        if let limit, shown >= limit { return true }
        return false
    }

    private func json(_ event: PortTapEvent, latency: Int64?, late: Bool) -> String {
        var text = (try? recordEncoder.encode(event)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        if text.hasSuffix("}") && (latency != nil || late) {
            text.removeLast()
            if late { text += ",\"late\":true" }
            if let latency { text += ",\"latency\":\(latency)" }
            text += "}"
        }
        return text
    }

    private func printTable() {
        let now = MonotonicNow.nanoseconds()
        let seconds = Double(now - lastTable) / 1e9
        lastTable = now
        let table = statsView.table(seconds: seconds, clock: LiveView.clock(Int64(Date().timeIntervalSince1970 * 1e9)))
        emit((live.colour ? "\u{1B}[H\u{1B}[2J" : "") + table)
    }

    private func finish(_ loop: RunLoop) {
        // What is still queued for this sniffer, and what waits in the
        // reorder window, is shown first (unless --count was reached), then
        // the counts are read a last time, so that the summary adds up:
        // received + dropped = owed.
        if let limit, shown >= limit {} else {
            pendingReceiver?()
            _ = releaseDue(all: true)
        }
        summary.lateCount = reorder.lateCount
        readCounts()
        if view == .stats { printTable() }
        standardError(summary.text + "\n")
        loop.stop()
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

enum MonotonicNow {
    static func nanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec)
    }
}

/// Unbuffered output, so that lines appear as events arrive, even in a pipe.
func emit(_ line: String) { writeAll(1, Array((line + "\n").utf8)) }

func standardError(_ text: String) { writeAll(2, Array(text.utf8)) }

func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
    var offset = 0
    while offset < bytes.count {
        let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
        if written < 0 {
            if errno == EINTR { continue }
            return
        }
        offset += written
    }
}
