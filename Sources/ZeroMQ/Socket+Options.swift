internal import CZeroMQ
public import FoundationEssentials
internal import Glibc

/// Socket options (`zmq_setsockopt` / `zmq_getsockopt`).
///
/// Thread rules for every member: owner thread (see ``Socket``), like any other socket
/// operation. Errors: ``ZMQError`` with operation `zmq_setsockopt(<option>)` or
/// `zmq_getsockopt(<option>)`; `EINVAL` for an unknown option or a bad value, `ENOTSOCK`
/// after close.
extension Socket {
    // MARK: - Named options

    /// Sets how long unsent messages are kept after close (`ZMQ_LINGER`): -1 forever,
    /// 0 (the default here, set by ``ZMQContext/makeSocket(_:)``) none.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setLinger(milliseconds: Int32) throws(ZMQError) {
        try setInt32(ZMQ_LINGER, milliseconds, name: "ZMQ_LINGER")
    }

    /// The linger period in milliseconds (`ZMQ_LINGER`).
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`ENOTSOCK`).
    public var linger: Int32 {
        get throws(ZMQError) { try getInt32(ZMQ_LINGER, name: "ZMQ_LINGER") }
    }

    /// Sets the outgoing high-water mark in messages (`ZMQ_SNDHWM`; 0 means no limit).
    /// Takes effect for connections made afterwards.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setSendHighWaterMark(_ n: Int32) throws(ZMQError) {
        try setInt32(ZMQ_SNDHWM, n, name: "ZMQ_SNDHWM")
    }

    /// Sets the incoming high-water mark in messages (`ZMQ_RCVHWM`; 0 means no limit).
    /// Takes effect for connections made afterwards.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setReceiveHighWaterMark(_ n: Int32) throws(ZMQError) {
        try setInt32(ZMQ_RCVHWM, n, name: "ZMQ_RCVHWM")
    }

    /// Sets the largest frame a peer may send (`ZMQ_MAXMSGSIZE`; -1, the default, means
    /// no limit).
    ///
    /// libzmq checks each frame against it, not the sum of a multipart message. A peer
    /// on tcp or ipc that announces a larger frame is disconnected before the frame is
    /// read, so its message never arrives; the socket goes on working and the peer may
    /// reconnect. inproc has no wire and is not checked.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setMaxMessageSize(_ bytes: Int64) throws(ZMQError) {
        try setInt64(ZMQ_MAXMSGSIZE, bytes, name: "ZMQ_MAXMSGSIZE")
    }

    /// Sets how long a blocking send waits before throwing `EAGAIN` (`ZMQ_SNDTIMEO`;
    /// -1, the default, waits forever).
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setSendTimeout(milliseconds: Int32) throws(ZMQError) {
        try setInt32(ZMQ_SNDTIMEO, milliseconds, name: "ZMQ_SNDTIMEO")
    }

    /// Sets how long a blocking receive waits before throwing `EAGAIN` (`ZMQ_RCVTIMEO`;
    /// -1, the default, waits forever).
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setReceiveTimeout(milliseconds: Int32) throws(ZMQError) {
        try setInt32(ZMQ_RCVTIMEO, milliseconds, name: "ZMQ_RCVTIMEO")
    }

    /// Queues messages only on completed connections (`ZMQ_IMMEDIATE`), so that sends
    /// block (or fail with `dontWait`) instead of piling up for a peer that is not there.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`EINVAL`, `ENOTSOCK`).
    public func setImmediate(_ on: Bool) throws(ZMQError) {
        try setInt32(ZMQ_IMMEDIATE, on ? 1 : 0, name: "ZMQ_IMMEDIATE")
    }

    /// Sets the routing id this socket presents to ROUTER peers (`ZMQ_ROUTING_ID`):
    /// 1 to 255 bytes, not starting with a zero byte. Set it before connecting.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`EINVAL` for a bad length, `ENOTSOCK`).
    public func setRoutingID(_ id: Data) throws(ZMQError) {
        let result = id.withUnsafeBytes { bytes in
            Result { () throws(ZMQError) in try setBytes(ZMQ_ROUTING_ID, bytes, name: "ZMQ_ROUTING_ID") }
        }
        try result.get()
    }

    /// Subscribes a SUB socket to messages whose first frame starts with `prefix`
    /// (`ZMQ_SUBSCRIBE`); an empty prefix subscribes to everything. The subscription
    /// reaches publishers asynchronously: what they send before it arrives is lost.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`EINVAL` on other socket types, `ENOTSOCK`).
    public func subscribe(_ prefix: Data) throws(ZMQError) {
        let result = prefix.withUnsafeBytes { bytes in
            Result { () throws(ZMQError) in try setBytes(ZMQ_SUBSCRIBE, bytes, name: "ZMQ_SUBSCRIBE") }
        }
        try result.get()
    }

    // MARK: - Readiness

    /// The socket's readiness signal (`ZMQ_FD`), for epoll or poll.
    ///
    /// It is edge-triggered and not a plain "readable" flag: it fires when libzmq has
    /// commands for the socket. After it fires, read ``events`` and receive until
    /// ``SocketEvents/pollIn`` is gone; only then can you wait on it again. It also fires
    /// spuriously. The socket owns the descriptor: never read, write or close it.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`ENOTSOCK`).
    public var fileDescriptor: Int32 {
        get throws(ZMQError) { try getInt32(ZMQ_FD, name: "ZMQ_FD") }
    }

    /// What the socket can do now without blocking (`ZMQ_EVENTS`).
    ///
    /// Reading it also processes the socket's pending commands, which resets the
    /// ``fileDescriptor`` signal: read it after every wake-up.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`ETERM`, `ENOTSOCK`); `EINTR` is retried.
    public var events: SocketEvents {
        get throws(ZMQError) { SocketEvents(rawValue: try getInt32(ZMQ_EVENTS, name: "ZMQ_EVENTS")) }
    }

    /// Whether the frame last received has more frames after it (`ZMQ_RCVMORE`).
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` (`ENOTSOCK`).
    public var hasMoreFrames: Bool {
        get throws(ZMQError) { try getInt32(ZMQ_RCVMORE, name: "ZMQ_RCVMORE") != 0 }
    }

    // MARK: - Any option

    /// Sets an `int` option by its `ZMQ_*` number. Spell the value's type out
    /// (`Int32(1)`): an untyped literal is ambiguous with the `Int64` variant.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` with operation `zmq_setsockopt(option <n>)`: `EINVAL` for
    ///   an unknown option or a value of the wrong size, `ENOTSOCK`.
    public func setOption(_ option: Int32, _ value: Int32) throws(ZMQError) {
        try setInt32(option, value, name: nil)
    }

    /// Sets an `int64_t` option by its `ZMQ_*` number (for example `ZMQ_MAXMSGSIZE`).
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` with operation `zmq_setsockopt(option <n>)`: `EINVAL`,
    ///   `ENOTSOCK`.
    public func setOption(_ option: Int32, _ value: Int64) throws(ZMQError) {
        try setInt64(option, value, name: nil)
    }

    /// Sets a binary or string option by its `ZMQ_*` number (for example
    /// `ZMQ_UNSUBSCRIBE`); strings go without a terminating NUL.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` with operation `zmq_setsockopt(option <n>)`: `EINVAL`,
    ///   `ENOTSOCK`.
    public func setOption(_ option: Int32, bytes: UnsafeRawBufferPointer) throws(ZMQError) {
        try setBytes(option, bytes, name: nil)
    }

    /// Reads an `int` option by its `ZMQ_*` number.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` with operation `zmq_getsockopt(option <n>)`: `EINVAL` for
    ///   an unknown option or one that is not an `int`, `ENOTSOCK`.
    public func int32Option(_ option: Int32) throws(ZMQError) -> Int32 {
        try getInt32(option, name: nil)
    }

    /// Reads an `int64_t` option by its `ZMQ_*` number.
    ///
    /// Thread rules: owner thread.
    /// - Throws: ``ZMQError`` with operation `zmq_getsockopt(option <n>)`: `EINVAL`,
    ///   `ENOTSOCK`.
    public func int64Option(_ option: Int32) throws(ZMQError) -> Int64 {
        try getInt64(option, name: nil)
    }

    // MARK: - Plumbing

    /// "ZMQ_LINGER", or "option 17" for options set by number.
    private static func label(_ option: Int32, _ name: StaticString?) -> String {
        name.map { "\($0)" } ?? "option \(option)"
    }

    private func setInt32(_ option: Int32, _ value: Int32, name: StaticString?) throws(ZMQError) {
        var value = value
        try setRaw(option, &value, MemoryLayout<Int32>.size, name: name)
    }

    private func setInt64(_ option: Int32, _ value: Int64, name: StaticString?) throws(ZMQError) {
        var value = value
        try setRaw(option, &value, MemoryLayout<Int64>.size, name: name)
    }

    private func setBytes(_ option: Int32, _ bytes: UnsafeRawBufferPointer, name: StaticString?) throws(ZMQError) {
        try setRaw(option, bytes.baseAddress, bytes.count, name: name)
    }

    private func setRaw(_ option: Int32, _ value: UnsafeRawPointer?, _ size: Int, name: StaticString?) throws(ZMQError) {
        let socket = try checkedHandle("zmq_setsockopt(\(Self.label(option, name)))")
        if zmq_setsockopt(socket, option, value, size) != 0 {
            throw ZMQError.last("zmq_setsockopt(\(Self.label(option, name)))")
        }
    }

    private func getInt32(_ option: Int32, name: StaticString?) throws(ZMQError) -> Int32 {
        var value: Int32 = 0
        try getRaw(option, &value, MemoryLayout<Int32>.size, name: name)
        return value
    }

    private func getInt64(_ option: Int32, name: StaticString?) throws(ZMQError) -> Int64 {
        var value: Int64 = 0
        try getRaw(option, &value, MemoryLayout<Int64>.size, name: name)
        return value
    }

    /// Reads a fixed-size option, retrying EINTR (ZMQ_EVENTS processes commands and can
    /// be interrupted).
    private func getRaw(_ option: Int32, _ value: UnsafeMutableRawPointer, _ size: Int, name: StaticString?) throws(ZMQError) {
        let socket = try checkedHandle("zmq_getsockopt(\(Self.label(option, name)))")
        while true {
            var length = size
            if zmq_getsockopt(socket, option, value, &length) == 0 { return }
            if zmq_errno() == EINTR { continue }
            throw ZMQError.last("zmq_getsockopt(\(Self.label(option, name)))")
        }
    }

    /// Reads a NUL-terminated string option such as ZMQ_LAST_ENDPOINT.
    func stringOption(_ option: Int32, name: StaticString) throws(ZMQError) -> String {
        let socket = try checkedHandle("zmq_getsockopt(\(name))")
        // Endpoints are short (an ipc path is at most 107 bytes), but libzmq answers
        // EINVAL when the buffer is too small, so try once more with plenty.
        for capacity in [256, 4096] {
            var length = capacity
            let text = withUnsafeTemporaryAllocation(of: CChar.self, capacity: capacity) { buffer -> String? in
                guard zmq_getsockopt(socket, option, buffer.baseAddress, &length) == 0 else { return nil }
                // length counts the terminating NUL; be safe if it is missing.
                let end = buffer.prefix(length).firstIndex(of: 0) ?? length
                return String(decoding: UnsafeRawBufferPointer(start: buffer.baseAddress, count: end), as: UTF8.self)
            }
            if let text { return text }
            if zmq_errno() != EINVAL { break }
        }
        throw ZMQError.last("zmq_getsockopt(\(name))")
    }
}
