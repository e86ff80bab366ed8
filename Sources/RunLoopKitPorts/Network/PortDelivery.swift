import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// How a message read from a tcp socket reaches its port: its frames are
/// handed to the port's receiver (`PortReceiver.hand`, moved, nothing
/// copied), and the port's loop is told. Read on that loop's own thread
/// (its `LoopNetworkReader`), the port is marked ready there and then, with
/// no system call and no other thread; read elsewhere, the loop's reader is
/// asked to mark it (`LoopNetworkReader.markReady(_:)`), which wakes it.
/// One per socket's reading side (`TCPInbound`), used under its reader lock.
struct PortDelivery {
    enum Outcome { case delivered, full, noSuchPort }

    /// The ports messages went to, by id, held weakly: a closed port goes.
    private var known: [UInt64: WeakPortReference] = [:]
    /// When `known` is next swept of closed ports (it doubles with the live ones).
    private var sweepAt = 1_024

    /// Hands `message` to port `portID`; `reader` is the loop reader
    /// reading, on its loop's thread (nil on the network thread).
    mutating func hand(_ message: ArraySlice<Message>, to portID: UInt64, readBy reader: LoopNetworkReader?) -> Outcome {
        guard let port = port(portID), let receiver = port.receiver else { return .noSuchPort }
        switch receiver.hand(message) {
        case .closed: return .noSuchPort
        case .full: return .full
        case .queued: break
        }
        // Not scheduled yet: its loop looks at its queue when it is.
        guard let source = port.state.withLock({ $0.source }), let loop = source.binding.loop else { return .delivered }
        if let reader, reader.loop === loop {
            loop.markReady(source)
        } else {
            NetworkHub.shared.markReady(source, on: loop)
        }
        return .delivered
    }

    /// The live tcp port `portID` of this process.
    private mutating func port(_ portID: UInt64) -> Port? {
        if let port = known[portID]?.port {
            if port.isValid { return port }
            known[portID] = nil
            return nil
        }
        guard let port = PortRegistry.shared.localPort(portID), port.isValid, port.address.reach == .network else { return nil }
        if known.count >= sweepAt {
            known = known.filter { $0.value.port?.isValid == true }
            sweepAt = max(1_024, known.count * 2)
        }
        known[portID] = WeakPortReference(port)
        return port
    }
}

/// A port a socket's reader delivers to, held weakly.
struct WeakPortReference {
    weak var port: Port?
    init(_ port: Port) { self.port = port }
}
