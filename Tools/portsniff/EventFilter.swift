import RunLoopKit

/// Which events to show: each option given narrows the stream; several
/// values of one option match any of them (`--msgid 1 --msgid 2`).
struct EventFilter {
    var msgids: Set<UInt32> = []
    var ports: Set<String> = []
    var threads: Set<String> = []
    var pids: Set<Int32> = []

    func accepts(_ event: PortTapEvent) -> Bool {
        if !msgids.isEmpty && !msgids.contains(event.msgid) { return false }
        if !ports.isEmpty && !ports.contains(event.destination) && !ports.contains(event.source ?? "") { return false }
        if !threads.isEmpty && !threads.contains(event.thread) { return false }
        if !pids.isEmpty && !pids.contains(event.pid) { return false }
        return true
    }
}
