import FoundationEssentials
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A received message read where it arrived, for a handler set with
/// ``Port/setInPlaceMessageHandler(_:)``: the same msgid, components and
/// ports as the ``PortMessage`` that ``Port/setMessageHandler(_:)`` would
/// get, without a `Data` made for each data component. A stream of many
/// small messages spends most of its receiving time making those `Data`
/// (docs/performance.md, "The port path"); a view reads the bytes in the buffer they
/// arrived in.
///
/// A view is valid only while its handler runs: it is noncopyable and lent
/// to the handler (`borrowing`), so it cannot be kept, and the buffers that
/// ``unsafeBytes(ofComponent:)`` returns must not be used after the handler
/// returns. Keep what you need by copying it: ``data(ofComponent:)``, or the
/// whole message with ``makeMessage()``.
///
/// ```swift
/// port.setInPlaceMessageHandler { message in
///     let bytes = message.unsafeBytes(ofComponent: 0)
///     total += bytes.reduce(0) { $0 + Int($1) }
///     if let reply = message.replyPort { try? reply.send(msgid: message.msgid, before: Date() + 1) }
/// }
/// ```
public struct PortMessageView: ~Copyable {
    /// The message id (NSPortMessage `msgid`).
    public var msgid: UInt32 { read { $0.header.msgid } }
    // unowned(unsafe): a view lives only inside its handler's call, while
    // the port it arrived on (delivering it) and its reply port (held by
    // the delivering batch) are alive; counted references to ports take
    // Swift's slow path (a port's counts live in a side table).
    // U-VIEW (docs/unsafe-sites.md).
    unowned(unsafe) private let arrival: Port
    unowned(unsafe) private let reply: Port?
    // Uncounted: the delivering batch holds it, and fills it again only
    // after the handler returns. Read through `read`, as a guaranteed
    // reference: an unowned(unsafe) one was retained and released at
    // every use.
    // U-VIEW (docs/unsafe-sites.md).
    private let message: Unmanaged<InPlaceMessage>

    init(arrivedOn port: Port, replyPort: Port?, message: InPlaceMessage) {
        arrival = port
        reply = replyPort
        self.message = Unmanaged.passUnretained(message)
    }

    @inline(__always)
    private func read<Result>(_ body: (InPlaceMessage) -> Result) -> Result {
        message.withGuaranteedReference(body)
    }

    /// The number of components, data and ports.
    public var componentCount: Int { read { $0.header.componentCount } }

    /// The port it arrived on (NSPortMessage `receivePort` for a received message).
    public var receivePort: Port { arrival }

    /// The port replies go to, if the sender gave one (NSPortMessage
    /// `sendPort` for a received message; ``PortMessage/replyPort``).
    public var replyPort: Port? { reply }

    /// The W3C trace context the message was sent in, if it carried one
    /// (``PortMessage/traceContext``); read from the message's header
    /// each time.
    public var traceContext: PortTraceContext? {
        read { $0.header.hasTraceContext ? WireFormat.traceContext(ofHeader: $0.headerFrame) : nil }
    }

    /// Whether component `index` is a port (else it is data).
    /// - Precondition: `index` is below ``componentCount``.
    public func isPort(at index: Int) -> Bool {
        checkIndex(index)
        return read { $0.isPort(index) }
    }

    /// The bytes of data component `index`, where they arrived: no copy.
    /// - Important: valid only until the handler returns.
    /// - Precondition: `index` is below ``componentCount`` and names a data component.
    public func unsafeBytes(ofComponent index: Int) -> UnsafeRawBufferPointer {
        return read { message in
            checkIndex(index, of: message)
            precondition(!message.isPort(index), "component \(index) is a port: read it with port(at:)")
            return message.bytes(ofComponent: index)
        }
    }

    /// A copy of data component `index`, to keep.
    /// - Precondition: `index` is below ``componentCount`` and names a data component.
    public func data(ofComponent index: Int) -> Data {
        let bytes = unsafeBytes(ofComponent: index)
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return Data() }
        return Data(bytes: base, count: bytes.count)
    }

    /// Port component `index`, a send right to the port it names (S-PORT-3).
    /// - Precondition: `index` is below ``componentCount`` and names a port component.
    public func port(at index: Int) -> Port {
        return read { message in
            checkIndex(index, of: message)
            precondition(message.isPort(index), "component \(index) is data: read it with unsafeBytes(ofComponent:) or data(ofComponent:)")
            return message.port(ofComponent: index)
        }
    }

    /// The message as a ``PortMessage`` of its own (each data component
    /// copied into a `Data`), as ``Port/setMessageHandler(_:)`` delivers it.
    public func makeMessage() -> PortMessage {
        var copy = PortMessage(arrivingOn: arrival)
        copy.msgid = msgid
        copy.components = (0..<componentCount).map { index in
            isPort(at: index) ? .port(port(at: index)) : .data(data(ofComponent: index))
        }
        copy.sendPort = reply
        return copy
    }

    private func checkIndex(_ index: Int) {
        read { checkIndex(index, of: $0) }
    }

    private func checkIndex(_ index: Int, of message: InPlaceMessage) {
        let count = message.header.componentCount
        precondition(index >= 0 && index < count, "component \(index) of a message with \(count): index from 0 to componentCount - 1")
    }
}
