internal import CZeroMQ
internal import Glibc

extension Socket {
    /// Sends `message`'s content as one frame without copying it
    /// (`zmq_msg_send`): what a received frame is forwarded with. On
    /// success the content is libzmq's and `message` is left empty, ready
    /// to receive into again; when the send would block (`dontWait`), the
    /// content stays in `message` for a retry.
    ///
    /// Thread rules: owner thread; `message` must not be used by another thread meanwhile.
    /// - Parameters:
    ///   - message: the frame to send.
    ///   - more: more frames of the same message follow (`ZMQ_SNDMORE`).
    ///   - dontWait: fail fast instead of blocking (`ZMQ_DONTWAIT`).
    /// - Returns: false only when `dontWait` is true and the send would block (`EAGAIN`).
    /// - Throws: ``ZMQError`` as ``send(_:more:dontWait:)-(UnsafeRawBufferPointer,_,_)``.
    @discardableResult
    public func send(_ message: Message, more: Bool = false, dontWait: Bool = false) throws(ZMQError) -> Bool {
        let socket = try checkedHandle("zmq_msg_send")
        var flags: Int32 = 0
        if more { flags |= ZMQ_SNDMORE }
        if dontWait { flags |= ZMQ_DONTWAIT }
        while true {
            if zmq_msg_send(message.pointer, socket, flags) >= 0 { return true }
            let code = zmq_errno()
            if code == EINTR { continue }
            if code == EAGAIN, dontWait { return false }
            throw ZMQError(code: code, operation: "zmq_msg_send")
        }
    }
}
