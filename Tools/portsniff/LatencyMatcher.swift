import RunLoopKit

/// Pairs each send with its delivery by trace id, whichever arrives first
/// (two processes' events reach the sniffer in no particular order), and
/// gives the send-to-delivery latency. Unpaired events are forgotten, oldest
/// first, beyond `capacity`.
struct LatencyMatcher {
    let capacity = 200_000
    private var waiting: [String: (kind: PortTapEvent.Kind, time: Int64)] = [:]
    private var order: [String] = []
    private var orderStart = 0

    /// The latency in nanoseconds if this event completes a pair.
    mutating func match(_ event: PortTapEvent) -> Int64? {
        guard let trace = event.trace, event.kind == .send || event.kind == .deliver else { return nil }
        if let other = waiting[trace], other.kind != event.kind {
            waiting[trace] = nil
            let (send, deliver) = event.kind == .deliver ? (other.time, event.time) : (event.time, other.time)
            return max(0, deliver - send)
        }
        waiting[trace] = (event.kind, event.time)
        order.append(trace)
        if order.count - orderStart > capacity {
            waiting[order[orderStart]] = nil
            orderStart += 1
            if orderStart > capacity {
                order.removeFirst(orderStart)
                orderStart = 0
            }
        }
        return nil
    }
}
