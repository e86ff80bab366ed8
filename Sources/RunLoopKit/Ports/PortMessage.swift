/// A message between ports (NSPortMessage): a message id, components that
/// are each bytes or a port, the port it is sent to and a port for the reply
/// (S-PORT-2). Nothing else travels: the component type allows only data and
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
        case data(Data)
        case port(Port)

        public var description: String {
            switch self {
            case let .data(data): "data(\(data.count) bytes)"
            case let .port(port): "port(\(port))"
            }
        }
    }

    public var msgid: UInt32
    public var components: [Component]
    /// The destination: set on a received message to the port it arrived on;
    /// `send(before:)` sends to it.
    public var sendPort: Port?
    /// Where the receiver should send its reply, if anywhere.
    public var replyPort: Port?

    public init(msgid: UInt32 = 0, components: [Component] = [], sendPort: Port? = nil, replyPort: Port? = nil) {
        self.msgid = msgid
        self.components = components
        self.sendPort = sendPort
        self.replyPort = replyPort
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

    public var description: String {
        "PortMessage(msgid: \(msgid), components: \(components), reply: \(replyPort.map(\.description) ?? "none"))"
    }
}
