import Glibc
import RunLoopKit

/// Which events to show. Each option given narrows the stream; several
/// values of one option match any of them (`--msgid 1 --msgid 2`). Names
/// (ports, processes, threads) are shell globs (`*`, `?`, `[...]`, as
/// fnmatch(3) reads them), so `--port 'worker-*'` matches a port name that
/// carries a pid whatever the run; a value that starts with `!` excludes
/// what it matches (`--thread '!dispatch-*'`). Of one option, an event
/// must match one of the values without `!` (if there are any) and none
/// of those with it.
struct EventFilter {
    /// Values of one option: the globs to match, the globs to exclude.
    struct Patterns {
        private(set) var included: [String] = []
        private(set) var excluded: [String] = []

        init(_ values: [String]) {
            for value in values {
                if value.hasPrefix("!") { excluded.append(String(value.dropFirst())) } else { included.append(value) }
            }
        }

        var isEmpty: Bool { included.isEmpty && excluded.isEmpty }

        /// Whether the names pass: one of them matches an included glob
        /// (when there are some) and none matches an excluded one.
        func accepts(_ names: [String]) -> Bool {
            if excluded.contains(where: { glob in names.contains { Self.matches(glob, $0) } }) { return false }
            return included.isEmpty || included.contains { glob in names.contains { Self.matches(glob, $0) } }
        }

        static func matches(_ glob: String, _ name: String) -> Bool { fnmatch(glob, name, 0) == 0 }
    }

    var msgids: Set<UInt32> = []
    var ports = Patterns([])
    var processes = Patterns([])
    var threads = Patterns([])
    var pids: Set<Int32> = []
    /// `send`, `deliver`, `sendFailed`, `messageDropped` (or `!` one of them).
    var kinds = Patterns([])
    /// `--trace-id`: W3C trace ids, or their first digits, in lowercase.
    var w3cTraceIDPrefixes: [String] = []

    /// Whether no filter was given: every event is accepted.
    var isEmpty: Bool {
        msgids.isEmpty && ports.isEmpty && processes.isEmpty && threads.isEmpty && pids.isEmpty && kinds.isEmpty
            && w3cTraceIDPrefixes.isEmpty
    }

    /// Whether the process passes --pid and --process: a line about the
    /// process itself (its missed events) shows only then.
    func acceptsProcess(pid: Int32, name: String?) -> Bool {
        if !pids.isEmpty && !pids.contains(pid) { return false }
        if !processes.isEmpty && !processes.accepts([name ?? "?"]) { return false }
        return true
    }

    func accepts(_ event: PortTapEvent) -> Bool {
        if !msgids.isEmpty && !msgids.contains(event.msgid) { return false }
        if !pids.isEmpty && !pids.contains(event.pid) { return false }
        if !ports.isEmpty && !ports.accepts([event.destination] + (event.source.map { [$0] } ?? [])) { return false }
        if !processes.isEmpty && !processes.accepts([event.process ?? "?"]) { return false }
        if !threads.isEmpty && !threads.accepts([event.thread]) { return false }
        if !kinds.isEmpty && !kinds.accepts([event.kind.rawValue]) { return false }
        if !w3cTraceIDPrefixes.isEmpty {
            guard let id = event.w3cTraceID, w3cTraceIDPrefixes.contains(where: { id.hasPrefix($0) }) else { return false }
        }
        return true
    }
}
