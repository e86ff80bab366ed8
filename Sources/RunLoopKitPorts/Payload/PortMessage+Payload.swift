@_spi(RunLoopKitInternals) import RunLoopKitCore

extension PortMessage {
    /// An outgoing message whose payload is `payload`: its bytes in the
    /// first component, the ports inside it as the components after
    /// (docs/wire-format.md, "Typed payloads"). A `Port` anywhere in the
    /// value travels as a port component, as `NSPortCoder` sent ports, and
    /// arrives as a usable send right (this process's own port as itself).
    ///
    /// ```swift
    /// struct Job: Codable, Sendable { var id: Int; var results: Port }
    /// let message = try PortMessage(msgid: 1, payload: Job(id: 7, results: inbox), sendPort: worker)
    /// try message.send(before: Date() + 1)
    /// ```
    ///
    /// The same value encodes to the same bytes wherever its `Codable`
    /// conformance encodes in a fixed order (a `Dictionary`'s keys come in
    /// no fixed order).
    /// - Throws: `PayloadError.valueNotEncodable` when the value's
    ///   `encode(to:)` throws.
    public init<T: Encodable & Sendable>(
        msgid: UInt32 = 0, payload: T, encoding: PayloadEncoding = .binary, sendPort: Port? = nil, replyPort: Port? = nil
    ) throws(PayloadError) {
        self.init(msgid: msgid, components: try Payload.components(of: payload, encoding: encoding), sendPort: sendPort, replyPort: replyPort)
    }

    /// The message's payload as a `T`.
    ///
    /// - Throws: `PayloadError`: `.notAPayload` for a message without one,
    ///   `.wrongType` when it holds another type, `.unsupportedVersion` or
    ///   `.unknownEncoding` for a format this side cannot read, `.malformed`
    ///   for bytes that do not read, `.valueDoesNotFit` when the value does
    ///   not fit `T` (a key missing, an enum case this side does not know).
    public func payload<T: Decodable>(as type: T.Type) throws(PayloadError) -> T {
        try Payload.value(type, from: components)
    }

    /// The type name the message's payload says it holds (the sender's
    /// `String(reflecting:)` of its type), or nil for a message without a
    /// typed payload: for routing messages of several types.
    public var payloadTypeName: String? {
        guard case let .data(data)? = components.first else { return nil }
        return data.withUnsafeBytes { bytes in try? Payload.readHeader(bytes).typeName }
    }

    /// The encoding of the message's payload, nil without one.
    public var payloadEncoding: PayloadEncoding? {
        guard case let .data(data)? = components.first else { return nil }
        return data.withUnsafeBytes { bytes in try? Payload.readHeader(bytes).encoding }
    }
}
