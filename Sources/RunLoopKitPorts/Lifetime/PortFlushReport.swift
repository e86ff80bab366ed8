/// What `Port.flushOutbound(within:)` found still unsent to other
/// processes when its bound ran out: what a process that exits then loses.
/// Empty when everything its ports accepted for other processes was
/// written (and, over ipc, read by the receiving process).
public struct PortFlushReport: Sendable, Hashable, CustomStringConvertible {
    /// Messages accepted but not yet written, by where they go: a port
    /// (over ipc) or a peer process's address (over tcp).
    public var unwrittenMessages: [String: Int]
    /// Bytes written to Unix sockets that their receivers had not read.
    public var unreadBytes: Int64
    /// Channels whose last message was too large to be counted (libzmq
    /// may still hold it).
    public var uncountedChannels: Int
    /// Channels a sending thread held throughout the wait (what they
    /// queued is not counted).
    public var busyChannels: Int
    /// How long the flush waited.
    public var elapsed: Duration

    /// Nothing was left.
    public var isEmpty: Bool {
        unwrittenMessages.isEmpty && unreadBytes == 0 && uncountedChannels == 0 && busyChannels == 0
    }

    /// "nothing lost", or what was left, as the exit's log line says it.
    public var description: String {
        guard !isEmpty else { return "everything accepted was written (\(elapsed))" }
        var parts: [String] = []
        let messages = unwrittenMessages.values.reduce(0, +)
        if messages > 0 {
            let places = unwrittenMessages.sorted { $0.key < $1.key }.map { "\($0.value) to \($0.key)" }.joined(separator: ", ")
            parts.append("\(messages) message(s) accepted but not written (\(places))")
        }
        if unreadBytes > 0 { parts.append("\(unreadBytes) byte(s) written but not yet read by their receivers") }
        if uncountedChannels > 0 { parts.append("\(uncountedChannels) channel(s) whose last, large message libzmq may still hold") }
        if busyChannels > 0 { parts.append("\(busyChannels) channel(s) held by a sending thread throughout") }
        return parts.joined(separator: "; ") + " after \(elapsed)"
    }
}
