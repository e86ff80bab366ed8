import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// How a message read from a tcp socket reaches its port: its holder is
/// handed to the port's receiver (`PortReceiver.hand`, nothing copied or
/// moved), and the port's loop is told. Read on that loop's own thread
/// (its `LoopNetworkReader`), the port is marked ready there and then, with
/// no system call and no other thread; read elsewhere, the loop's reader is
/// asked to mark it (`LoopNetworkReader.markReady(_:)`), which wakes it.
/// One per socket's reading side (`TCPInbound`), used under its reader lock.
struct PortDelivery {
    enum Outcome { case delivered, full, noSuchPort }

    /// The ports messages went to, by id: the receiver held strongly (a
    /// message's path touches no weak reference, whose loads and releases
    /// go through the object's side table), the port weakly, for its
    /// source and loop when its queue was empty. A closed receiver goes.
    private var known: [UInt64: KnownPort] = [:]
    /// The last port handed to, found without hashing: a socket's messages
    /// mostly go to the port the one before went to. Unretained: `known`
    /// holds the entry as long as it is `last` (an entry leaves `known`
    /// only with `last` cleared or set to another), so a message costs
    /// no retain and release of it. U-INBOUND-STATE (docs/unsafe-sites.md).
    private var last: (portID: UInt64, port: Unmanaged<KnownPort>)?
    /// When `known` is next swept of closed ports (it doubles with the live ones).
    private var sweepAt = 1_024
    /// The loop whose port the last message handed went to, as far as
    /// known (a port's loop is looked up when its queue was empty): the
    /// socket's reading follows it (`TCPInbound.read`).
    var lastLoop: ObjectIdentifier?

    /// Hands `message` to port `portID` (delivered, it is an empty holder
    /// now, to read the next message into); `reader` is the loop reader
    /// reading, on its loop's thread (nil on the network thread).
    mutating func hand(_ message: inout IncomingFrames, to portID: UInt64, readBy reader: LoopNetworkReader?) -> Outcome {
        let outcome: Outcome
        if let last, last.portID == portID {
            // U-INBOUND-STATE (docs/unsafe-sites.md): `known` holds it.
            outcome = last.port.withGuaranteedReference { hand(&message, to: $0, readBy: reader) }
        } else if let known = knownPort(portID) {
            outcome = hand(&message, to: known, readBy: reader)
        } else {
            return .noSuchPort
        }
        // Its receiver closed: the entry goes (not while it was in use above).
        if outcome == .noSuchPort {
            known[portID] = nil
            last = nil
        }
        return outcome
    }

    /// `noSuchPort` when its receiver closed.
    @inline(__always)
    private mutating func hand(_ message: inout IncomingFrames, to known: KnownPort, readBy reader: LoopNetworkReader?) -> Outcome {
        switch known.receiver.hand(&message) {
        case .closed: return .noSuchPort
        case .full: return .full
        case .queued(first: false):
            lastLoop = known.loopID
            return .delivered
        case .queued(first: true): break
        }
        // Read on the port's loop, as at the last hand: marked there and then.
        // (Only the reader's two plain values are read: a bound `reader`
        // was retained and released, a trip to its side table each.)
        if let readerLoopID = reader?.loopID, let readingLoop = reader?.readingLoop,
            known.markReadyIfStillOn(readerLoopID, readingLoop) {
            lastLoop = readerLoopID
            return .delivered
        }
        // Not scheduled yet: its loop looks at its queue when it is.
        let source = known.source()
        let generation = source?.binding.generation ?? 0
        guard let source, let loop = source.binding.loop else {
            known.loopID = nil
            lastLoop = nil
            return .delivered
        }
        known.loopID = ObjectIdentifier(loop)
        known.bindingGeneration = generation
        lastLoop = known.loopID
        if let reader, reader.loopID == ObjectIdentifier(loop) {
            loop.markReady(source)
        } else {
            NetworkHub.shared.markReady(source, on: loop)
        }
        return .delivered
    }

    /// The live tcp port `portID` of this process, which becomes `last`.
    private mutating func knownPort(_ portID: UInt64) -> KnownPort? {
        // U-INBOUND-STATE (docs/unsafe-sites.md).
        if let known = known[portID] {
            last = (portID, Unmanaged.passUnretained(known))
            return known
        }
        guard let port = PortRegistry.shared.localPort(portID), port.isValid, port.address.reach == .network,
            let receiver = port.receiver
        else { return nil }
        if known.count >= sweepAt {
            known = known.filter { $0.value.receiver.isOpen }
            sweepAt = max(1_024, known.count * 2)
        }
        let entry = KnownPort(receiver: receiver, port: port)
        known[portID] = entry
        // U-INBOUND-STATE (docs/unsafe-sites.md).
        last = (portID, Unmanaged.passUnretained(entry))
        return entry
    }
}

/// A port a socket's reader delivers to: its receiver, and the port itself
/// held weakly. A class: a struct holding a weak reference is copied out
/// of the dictionary with a trip to the port's side table every message.
final class KnownPort {
    let receiver: PortReceiver
    weak var port: Port?
    // Both under the reader lock of the socket whose `PortDelivery` holds
    // this entry. U-INBOUND-STATE (docs/unsafe-sites.md).
    /// The port's source, made at its first schedule and kept for its
    /// life (it does not keep the port alive): found once, not through the
    /// weak port and its state's lock each time the queue was empty.
    @exclusivity(unchecked) private var scheduledSource: SocketSource? {
        didSet { scheduledSourceReference = scheduledSource.map { Unmanaged.passUnretained($0) } }
    }
    /// `scheduledSource`, uncounted (it holds it): what a message's hand
    /// uses, without a retain and a release of the source.
    // U-INBOUND-STATE (docs/unsafe-sites.md).
    @exclusivity(unchecked) private var scheduledSourceReference: Unmanaged<SocketSource>?
    /// The port's loop when its queue was last empty, and its source's
    /// binding's generation read just before that loop was.
    @exclusivity(unchecked) var loopID: ObjectIdentifier?
    @exclusivity(unchecked) var bindingGeneration: UInt64 = 0

    init(receiver: PortReceiver, port: Port) {
        self.receiver = receiver
        self.port = port
    }

    /// Marks the port's source ready on `readingLoop` (a reader's loop,
    /// reading on its own thread; `readerLoopID` its identity) if that is
    /// still the loop the source is bound to (its binding unchanged since
    /// `loopID` was found): true if it did. Neither the loop nor the source
    /// is retained. Were the loop found then gone, and the reader's at its
    /// address, the ready list drops a source its modes do not have, as it
    /// drops any stale one.
    // U-INBOUND-STATE, U-NETWORK-READER (docs/unsafe-sites.md).
    @inline(__always)
    func markReadyIfStillOn(_ readerLoopID: ObjectIdentifier, _ readingLoop: Unmanaged<RunLoop>) -> Bool {
        guard loopID == readerLoopID, let source = scheduledSourceReference else { return false }
        return source.withGuaranteedReference { source in
            guard source.binding.generation == bindingGeneration else { return false }
            readingLoop.withGuaranteedReference { $0.markReady(source) }
            return true
        }
    }

    /// The port's source, nil until the port is first scheduled.
    func source() -> SocketSource? {
        if let scheduledSource { return scheduledSource }
        scheduledSource = port?.state.withLock { $0.source }
        return scheduledSource
    }
}
