@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A message between ports (NSPortMessage): a message id, components that
/// are each bytes or a port, the port it is sent to and a port for the reply
/// (S-PORT-2); `sendPort` and `receivePort` mean what NSPortMessage says,
/// for outgoing and for received messages, and `replyPort` names the reply
/// port either way. Nothing else travels: the component type allows only data and
/// ports, and a port component arrives as a usable send right to the
/// original port (S-PORT-3).
///
/// ```swift
/// let request = PortMessage(msgid: 7, components: [.data(Data("ping".utf8))], replyPort: replies)
/// try server.send(request, before: Date() + 1)
/// ```
public struct PortMessage: Sendable, CustomStringConvertible {
    /// One component: bytes as they are, or a port (sent as a send right).
    public enum Component: Sendable, Equatable, CustomStringConvertible {
        /// Bytes, delivered as they were sent.
        case data(Data)
        /// A port, delivered as a send right to the original (S-PORT-3).
        case port(Port)

        /// `data(N bytes)` or `port(Port(...))`.
        public var description: String {
            switch self {
            case let .data(data): "data(\(data.count) bytes)"
            case let .port(port): "port(\(port))"
            }
        }
    }

    /// The message id, chosen by the application (NSPortMessage `msgid`).
    public var msgid: UInt32
    /// The data and port components, in order.
    public var components: [Component]
    /// As NSPortMessage documents: on an outgoing message, the port it is
    /// sent to (`send(before:)` sends to it); on a received message, the
    /// port replies go through, that is, the sender's reply port (S-PORT-3).
    public var sendPort: Port?
    /// As NSPortMessage documents: on an outgoing message, the port replies
    /// arrive at; on a received message, the port it arrived on.
    public var receivePort: Port?
    /// True for a message handed to a port's handler: its `sendPort` and
    /// `receivePort` then read as NSPortMessage's do for an incoming message.
    public private(set) var isIncoming = false

    /// On a received message, the W3C trace context it was sent in, if it
    /// carried one (docs/wire-format.md, "Trace context"): a message sent
    /// while tracing was started (RunLoopKitTracing) and a span was
    /// current. Its handler already runs in that trace; a message taken
    /// from a stream (`port.messages`) can be traced from here. Nil on an
    /// outgoing message: a send carries the sending span's context, not
    /// this one.
    public var traceContext: PortTraceContext? { traceBox?.context }

    /// Boxed, so that the message a batch reuses stays small, and an
    /// untraced one costs a nil reference.
    var traceBox: TraceContextBox?

    /// The reply port, whichever way the message goes: where replies
    /// arrive on an outgoing message (its `receivePort`), where replies go
    /// on a received one (its `sendPort`). Reply with
    /// `message.replyPort?.send(...)`.
    public var replyPort: Port? {
        get { isIncoming ? sendPort : receivePort }
        set { if isIncoming { sendPort = newValue } else { receivePort = newValue } }
    }

    /// An outgoing message to `sendPort`, whose replies arrive at `replyPort`.
    public init(msgid: UInt32 = 0, components: [Component] = [], sendPort: Port? = nil, replyPort: Port? = nil) {
        self.msgid = msgid
        self.components = components
        self.sendPort = sendPort
        self.receivePort = replyPort
    }

    /// Foundation's initializer (NSPortMessage `initWithSendPort:receivePort:components:`):
    /// an outgoing message to `sendPort` whose replies arrive at `receivePort`,
    /// with msgid 0.
    public init(sendPort: Port?, receivePort: Port?, components: [Component]) {
        self.init(msgid: 0, components: components, sendPort: sendPort, replyPort: receivePort)
    }

    /// An empty received message, as its handler sees it (NSPortMessage's
    /// reading of an incoming message): it arrived on `port`
    /// (`receivePort`); the decoder fills in the rest, and replies go to
    /// the reply port it carried (`sendPort`).
    init(arrivingOn port: Port) {
        self.msgid = 0
        self.components = []
        self.sendPort = nil
        self.receivePort = port
        self.isIncoming = true
    }

    /// Sends the message to `sendPort` (NSPortMessage `sendBeforeDate:`).
    /// - Throws: `PortError.invalidPort` if there is no send port, and
    ///   whatever `Port.send` throws.
    public func send(before deadline: Date) throws(PortError) {
        guard let sendPort else { throw .invalidPort("(none: the message has no sendPort)") }
        try sendPort.send(self, before: deadline)
    }

    /// The data components, in order, skipping ports.
    public var dataComponents: [Data] {
        components.compactMap { if case let .data(data) = $0 { data } else { nil } }
    }

    /// The msgid, the components and the reply port, for logs.
    public var description: String {
        "PortMessage(msgid: \(msgid), components: \(components), reply: \(replyPort.map(\.description) ?? "none"))"
    }
}

/// A received message's trace context, held by reference (`PortMessage.traceBox`).
final class TraceContextBox: Sendable {
    let context: PortTraceContext
    init(_ context: PortTraceContext) { self.context = context }
}
