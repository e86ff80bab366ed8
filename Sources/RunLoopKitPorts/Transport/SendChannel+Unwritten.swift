extension SendChannel {
    /// What a channel to another process still holds at exit.
    struct Unwritten {
        /// Messages its socket accepted that libzmq has not yet written to
        /// the kernel, counted for messages of up to `pooledFrameBytes`
        /// (libzmq does not say how long its queue is; those come from the
        /// channel's pool, which does).
        var messages: Int
        /// Whether `messages` is all: false when the last message was
        /// larger (or the pool was exhausted), so that libzmq may still hold
        /// it uncounted.
        var isCounted: Bool
        /// Whether the socket ever accepted a message: a channel that did
        /// not has written only libzmq's handshake, which is no one's loss.
        var hasAccepted: Bool
        /// Nothing left to write, as far as the channel can tell.
        var isEmpty: Bool { messages == 0 && isCounted }
    }
}
