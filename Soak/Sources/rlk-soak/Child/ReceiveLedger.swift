/// One receiving port's account of the streams that reach it: for each,
/// the sequence number it waits for next. A message with any other number
/// is a duplicate, a reordering or a gap. Confined to the port's loop
/// thread, except when the drain and the reports read it (under the
/// endpoint's lock).
struct ReceiveLedger {
    private struct StreamState {
        var next: UInt64 = 0
        var violations = 0
    }

    private var streams: [StreamKey: StreamState] = [:]
    /// What the drain waits for: stream, how many the sender sent.
    private var expectations: [StreamKey: UInt64] = [:]
    private(set) var unmetExpectations = 0

    /// What a message did to the ledger.
    enum Outcome {
        case inOrder
        case violation(String)
        case verifiedEnd
        /// From a process known to be dead, after its streams were let go.
        case lateFromDead
    }

    mutating func record(_ kind: TrafficMessage.Kind, _ message: TrafficMessage, isDead: (UInt32) -> Bool) -> Outcome {
        let key = message.key
        if streams[key] == nil && isDead(Identifiers.incarnation(of: key.senderID)) {
            return .lateFromDead
        }
        switch kind {
        case .probe:
            return .inOrder
        case .data:
            var state = streams[key] ?? StreamState()
            let expected = state.next
            state.next = message.number + 1
            defer {
                streams[key] = state
                if let wanted = expectations[key], expected < wanted, state.next >= wanted { unmetExpectations -= 1 }
            }
            if message.number == expected { return .inOrder }
            state.violations += 1
            let what = message.number < expected ? "duplicate or reordered" : "gap (\(message.number - expected) missing) or reordered"
            return .violation("stream \(describe(key)): expected #\(expected), got #\(message.number): \(what)")
        case .endOfStream:
            let received = streams.removeValue(forKey: key)?.next ?? 0
            guard received == message.number else {
                return .violation("stream \(describe(key)): end marker says \(message.number) sent, \(received) received in order")
            }
            return .verifiedEnd
        }
    }

    /// Lets go of the streams of processes that are dead: nothing more will
    /// come from them that could be checked, and a long-lived port must not
    /// keep them all.
    mutating func forgetSenders(of deadIncarnations: Set<UInt32>) {
        streams = streams.filter { !deadIncarnations.contains(Identifiers.incarnation(of: $0.key.senderID)) }
    }

    /// Starts the drain: the streams that must reach these counts.
    mutating func expect(_ wanted: [StreamKey: UInt64]) {
        expectations = wanted
        unmetExpectations = wanted.filter { (key, count) in (streams[key]?.next ?? 0) < count }.count
    }

    func result(for key: StreamKey) -> (received: UInt64, violations: Int) {
        let state = streams[key] ?? StreamState()
        return (state.next, state.violations)
    }

    private func describe(_ key: StreamKey) -> String {
        "\(Identifiers.describe(key.senderID))/\(key.streamID)"
    }
}
