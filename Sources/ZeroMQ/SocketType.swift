/// The ZeroMQ socket patterns; raw values are libzmq's `ZMQ_*` socket type constants.
///
/// The raw values are written as literals because an enum's raw values must be; a test
/// checks each against the socket's own `ZMQ_TYPE` option.
///
/// Thread rules: a plain value; `Sendable`.
public enum SocketType: Int32, Sendable, CaseIterable {
    /// `ZMQ_PAIR`: exclusive pair, one peer.
    case pair = 0
    /// `ZMQ_PUB`: publisher; drops messages for subscribers at their high-water mark.
    case pub = 1
    /// `ZMQ_SUB`: subscriber; receives nothing until ``Socket/subscribe(_:)``.
    case sub = 2
    /// `ZMQ_REQ`: strict send/receive alternation, client side.
    case req = 3
    /// `ZMQ_REP`: strict receive/send alternation, server side.
    case rep = 4
    /// `ZMQ_DEALER`: asynchronous request, round-robin out, fair-queued in.
    case dealer = 5
    /// `ZMQ_ROUTER`: asynchronous reply, addresses peers by routing id frames.
    case router = 6
    /// `ZMQ_PULL`: pipeline sink, fair-queued in.
    case pull = 7
    /// `ZMQ_PUSH`: pipeline source, round-robin out; blocks at the high-water mark.
    case push = 8
    /// `ZMQ_XPUB`: publisher that also receives subscription messages.
    case xpub = 9
    /// `ZMQ_XSUB`: subscriber that sends subscriptions as messages.
    case xsub = 10
    /// `ZMQ_STREAM`: raw TCP, first frame is the peer's routing id.
    case stream = 11
}
