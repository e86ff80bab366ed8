import RunLoopKit

/// Pairs each send with its delivery by trace id, and sets the delivery's
/// latency: the time between the two on the monotonic clock, which every
/// process on the machine shares. Events come in time order (the reorder
/// window), so a send is met before its delivery; a send later than the
/// window (shown marked late) still completes its pair, on its own line.
/// Unpaired events are forgotten, oldest first, beyond `capacity`.
struct LatencyMatcher {
    let capacity = 200_000
    private var waiting: [UInt64: (kind: PortTapEvent.Kind, time: Int64)] = [:]
    private var order: [UInt64] = []
    private var orderStart = 0

    /// Sets `event.latency` if it completes a pair.
    mutating func match(_ event: inout PortTapEvent) {
        guard let trace = event.trace, event.kind == .send || event.kind == .deliver else { return }
        if let other = waiting[trace], other.kind != event.kind {
            waiting[trace] = nil
            let (send, deliver) = event.kind == .deliver ? (other.time, event.monotonicTime) : (event.monotonicTime, other.time)
            event.latency = max(0, deliver - send)
            return
        }
        waiting[trace] = (event.kind, event.monotonicTime)
        order.append(trace)
        if order.count - orderStart > capacity {
            waiting[order[orderStart]] = nil
            orderStart += 1
            if orderStart > capacity {
                order.removeFirst(orderStart)
                orderStart = 0
            }
        }
    }
}
