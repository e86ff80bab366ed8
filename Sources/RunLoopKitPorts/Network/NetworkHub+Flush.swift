import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What tcp connections still hold for their peers (`Port.flushOutbound`).
extension NetworkHub {
    /// Waits until every open connection has written what it accepted, or
    /// until `deadline`; returns what was left, by peer address. Makes no
    /// hub: a process that never used tcp has nothing to flush.
    static func flushIfStarted(until deadline: UInt64) -> [(String, Int)] {
        guard isMade.load(ordering: .acquiring) else { return [] }
        while true {
            let left = shared.unwrittenMessages()
            if left.isEmpty || MonotonicClock.now() >= deadline { return left }
            usleep(1_000)
        }
    }

    /// Messages each open connection accepted that libzmq has not written
    /// (its frame pool's buffers still out); a connection a sender holds
    /// at the moment is looked at again on the next call.
    private func unwrittenMessages() -> [(String, Int)] {
        let open = state.withLock { Array($0.open.values) }
        var left: [(String, Int)] = []
        for connection in open where connection.brokenError == nil {
            // The pool's count is its owner's: whoever holds the socket's lock.
            guard connection.socketLock.tryLock() else {
                left.append((connection.remoteAddress, 1))
                continue
            }
            let count = connection.framePool.outstandingBuffers()
            connection.socketLock.unlock()
            if count > 0 { left.append((connection.remoteAddress, count)) }
        }
        return left
    }
}
