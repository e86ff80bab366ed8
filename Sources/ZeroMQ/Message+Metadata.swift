internal import CZeroMQ

extension Message {
    /// A property of the connection a received frame came on
    /// (`zmq_msg_gets`): "User-Id" (what the ZAP handler said), "Peer-Address"
    /// (the peer's IP address), "Socket-Type", "Routing-Id". nil when the
    /// frame has no such property (one not received, or an unknown name).
    ///
    /// Thread rules: the message's thread.
    public func property(_ name: String) -> String? {
        guard let value = zmq_msg_gets(pointer, name) else { return nil }
        return String(cString: value)
    }

    /// The file descriptor of the connection a received frame came on
    /// (`ZMQ_SRCFD`); nil when unknown (inproc, or a frame not received).
    /// Shutting it down (`shutdown(2)`) makes libzmq close that connection:
    /// a ROUTER has no call to drop one peer.
    ///
    /// Thread rules: the message's thread.
    public var sourceDescriptor: Int32? {
        let value = zmq_msg_get(pointer, ZMQ_SRCFD)
        return value >= 0 ? value : nil
    }
}
