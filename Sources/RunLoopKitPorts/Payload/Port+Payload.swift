@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Typed messages: a `Codable` value as a message's payload (PortMessage,
/// "Typed payloads"), sent, requested and handled as a value.
extension Port {
    // MARK: - Sending

    /// Sends `payload` as a typed message, waiting at most until `deadline`
    /// for room (S-PORT-4).
    ///
    /// ```swift
    /// try worker.send(Job(id: 7, results: inbox), before: Date() + 1)
    /// ```
    /// - Throws: `PortError.payload` when the value cannot be encoded;
    ///   otherwise what `send(_:before:)` throws.
    public func send<T: Encodable & Sendable>(
        _ payload: T, msgid: UInt32 = 0, encoding: PayloadEncoding = .binary, replyPort: Port? = nil, before deadline: Date
    ) throws(PortError) {
        try send(msgid: msgid, components: Self.components(of: payload, encoding: encoding), replyPort: replyPort,
                 deadline: SendDeadline(deadline))
    }

    /// Sends `payload` as a typed request and waits for a reply of type
    /// `Reply`, running the current thread's loop in a private mode
    /// meanwhile, as `sendRequest(msgid:components:sendTimeout:receiveTimeout:)`
    /// does.
    ///
    /// ```swift
    /// let answer = try server.sendRequest(Question(text: "?"), as: Answer.self, sendTimeout: 1, receiveTimeout: 5)
    /// ```
    /// - Throws: `PortError.payload` when the request cannot be encoded or
    ///   the reply is not a `Reply`; otherwise what the untyped request throws.
    public func sendRequest<T: Encodable & Sendable, Reply: Decodable>(
        _ payload: T, msgid: UInt32 = 0, as reply: Reply.Type, encoding: PayloadEncoding = .binary,
        sendTimeout: TimeInterval, receiveTimeout: TimeInterval
    ) throws(PortError) -> Reply {
        let message = try sendRequest(msgid: msgid, components: Self.components(of: payload, encoding: encoding),
                                      sendTimeout: sendTimeout, receiveTimeout: receiveTimeout)
        do { return try message.payload(as: Reply.self) } catch { throw .payload(error) }
    }

    /// Sends `payload` as a typed request and awaits a reply of type
    /// `Reply` without blocking a thread, as
    /// `request(msgid:components:timeout:)` does (cancellation included).
    ///
    /// ```swift
    /// let answer = try await server.request(Question(text: "?"), as: Answer.self, timeout: .seconds(5))
    /// ```
    /// - Throws: `CancellationError`, or a `PortError`: `.payload` when the
    ///   request cannot be encoded or the reply is not a `Reply`; otherwise
    ///   what the untyped request throws.
    public func request<T: Encodable & Sendable, Reply: Decodable>(
        _ payload: T, msgid: UInt32 = 0, as reply: Reply.Type, encoding: PayloadEncoding = .binary, timeout: Duration
    ) async throws -> Reply {
        let message = try await request(msgid: msgid, components: Self.components(of: payload, encoding: encoding), timeout: timeout)
        do { return try message.payload(as: Reply.self) } catch { throw PortError.payload(error) }
    }

    private static func components<T: Encodable>(of payload: T, encoding: PayloadEncoding) throws(PortError) -> [PortMessage.Component] {
        do { return try Payload.components(of: payload, encoding: encoding) } catch { throw .payload(error) }
    }

    // MARK: - Receiving

    /// Sets a handler that gets each message's payload as a `T`, with the
    /// message (its msgid, its reply port). A message whose payload is not
    /// a `T` (another type, an untyped message, a format this side cannot
    /// read, bytes that do not decode) never reaches the handler: it is
    /// dropped and counted in `dropCounts` with its reason
    /// (`PortDropReason.wrongPayloadType`, `.unsupportedPayloadVersion`,
    /// `.undecodablePayload`), and logged as other drops are.
    ///
    /// ```swift
    /// worker.setMessageHandler(for: Job.self) { job, message in
    ///     try? job.results.send(Result(id: job.id), before: Date() + 1)
    /// }
    /// ```
    public func setMessageHandler<T: Decodable & Sendable>(for type: T.Type, _ handler: @escaping @Sendable (T, PortMessage) -> Void) {
        setMessageHandler { message in
            do throws(PayloadError) {
                handler(try message.payload(as: T.self), message)
            } catch {
                message.receivePort?.recordPayloadDrop(error, msgid: message.msgid)
            }
        }
    }

    /// Sets a handler that answers typed requests: it gets each request's
    /// payload as a `T`, and what it returns is sent to the request's reply
    /// port as a typed reply, in the request's encoding (waiting at most
    /// `replyTimeout` for room). A message that is not a `T` is dropped and
    /// counted as `setMessageHandler(for:_:)` says; a request without a
    /// reply port is handled, and its reply logged as undeliverable.
    ///
    /// ```swift
    /// server.setRequestHandler(for: Question.self) { question, _ in Answer(text: question.text + "!") }
    /// ```
    public func setRequestHandler<T: Decodable & Sendable, Reply: Encodable & Sendable>(
        for type: T.Type, replyTimeout: TimeInterval = 1, _ handler: @escaping @Sendable (T, PortMessage) -> Reply
    ) {
        setMessageHandler(for: type) { request, message in
            let reply = handler(request, message)
            guard let replyPort = message.replyPort else {
                Port.logger.warning("port \(message.receivePort.map { "\($0)" } ?? "?"): a typed request \(message.msgid) came without a reply port; its reply is dropped")
                return
            }
            do throws(PortError) {
                try replyPort.send(reply, msgid: message.msgid, encoding: message.payloadEncoding ?? .binary,
                                   before: Date(timeIntervalSinceNow: replyTimeout))
            } catch {
                Port.logger.warning("port \(message.receivePort.map { "\($0)" } ?? "?"): the reply to typed request \(message.msgid) could not be sent: \(error)")
            }
        }
    }

    /// Counts a message a typed handler could not take, as drops of this
    /// port (S-PORT-7), and shows it to the tap.
    func recordPayloadDrop(_ error: PayloadError, msgid: UInt32) {
        guard let receiver else { return }
        receiver.drops.record(error.dropReason, "message \(msgid): \(error)")
        if PortTap.active.load(ordering: .relaxed) { PortTap.recordDrop(on: self, msgid: msgid, reason: error.dropReason) }
    }
}
