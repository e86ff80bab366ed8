/// A local port's messages as an `AsyncSequence`, with back-pressure
/// (S-ASYNC-2): what ``Port/messages(buffering:)`` returns.
///
/// At most ``Buffering/highWatermark`` messages wait in memory for the
/// consumer. When that many wait, the port is taken off its loop (as a
/// handler that unschedules its port ends its batch, S-SRC1-1), and the
/// rest wait in the port's own queue; once the consumer has taken the
/// buffer down to ``Buffering/lowWatermark``, the port is scheduled again.
/// A sender therefore feels a slow consumer as it would feel a slow
/// handler: its sends wait for room and, past their deadline, throw
/// `PortError.timedOut` (S-PORT-4), once the stream's buffer, the port's
/// receive queue (ZMQ_RCVHWM, 1,000 messages) and the sender's send queue
/// (ZMQ_SNDHWM, 1,000; over inproc libzmq counts the two queues as one
/// pipe of their sum) are full: about `highWatermark` + 2,000 messages
/// ahead of the consumer. docs/ports.md has the details.
///
/// The sequence has one consumer: iterate it once (a second iterator is a
/// programming error and traps). It ends when the port is invalidated,
/// after the messages already buffered. Ending the iteration (leaving the
/// loop, or dropping the iterator), cancelling the iterating task (which
/// ends it at once, as for any `AsyncStream`: S-ASYNC-1), or dropping an
/// unused sequence hands the port back: on its loop thread the port is
/// taken off the loop, then the stream's handler is cleared (unless another
/// was set since), and the messages the stream took in but never handed
/// out go back to the head of the port's queue, for its next handler or
/// stream. Nothing is lost that was not handed out.
///
/// ```swift
/// for await message in try inbox.messages() {
///     await process(message)      // a slow consumer holds the sender back
/// }
/// ```
public struct PortMessageStream: AsyncSequence, Sendable {
    /// Each element is an owned message (a `PortMessageView` cannot leave its handler).
    public typealias Element = PortMessage
    /// The stream never throws: it ends (nil) when the port is invalidated or the task cancelled.
    public typealias Failure = Never

    /// How many messages may wait in memory, and when the port resumes.
    public struct Buffering: Sendable, Hashable, CustomStringConvertible {
        /// The most messages that wait in the stream's buffer: at this many
        /// the port stops receiving. At least 1.
        public let highWatermark: Int
        /// Receiving resumes once the consumer took the buffer down to this
        /// many. From 0 to `highWatermark - 1`.
        public let lowWatermark: Int

        /// Watermarks for the stream's buffer. A `lowWatermark` out of
        /// range is a programming error and traps.
        public init(highWatermark: Int, lowWatermark: Int) {
            precondition(highWatermark >= 1, "PortMessageStream.Buffering: highWatermark \(highWatermark) must be at least 1.")
            precondition(
                (0..<highWatermark).contains(lowWatermark),
                "PortMessageStream.Buffering: lowWatermark \(lowWatermark) must be from 0 to highWatermark - 1 (\(highWatermark - 1)).")
            self.highWatermark = highWatermark
            self.lowWatermark = lowWatermark
        }

        /// 256 messages at most, resuming at 64: a quarter of a port's
        /// receive queue, so that memory stays small while the port's
        /// batches (up to 32 messages a callout by default) keep their size.
        public static let `default` = Buffering(highWatermark: 256, lowWatermark: 64)

        /// `high 256, low 64`.
        public var description: String { "high \(highWatermark), low \(lowWatermark)" }
    }

    private let feed: MessageStreamFeed
    /// Hands the port back if the sequence is dropped without an iterator.
    private let owner: Owner

    init(feed: MessageStreamFeed) {
        self.feed = feed
        owner = Owner(feed, isIterator: false)
    }

    /// The most messages its buffer held at once (for tests).
    var peakBufferedCount: Int { feed.peakBufferedCount }

    /// The stream's only iterator; a second traps.
    public func makeAsyncIterator() -> Iterator {
        feed.claimIterator()
        return Iterator(feed: feed)
    }

    /// Hands out the messages in the order they arrived.
    public struct Iterator: AsyncIteratorProtocol {
        private let feed: MessageStreamFeed
        /// Hands the port back when the iterator goes (the iteration ended).
        private let lease: Owner

        init(feed: MessageStreamFeed) {
            self.feed = feed
            lease = Owner(feed, isIterator: true)
        }

        /// The next message; nil once the port was invalidated and the
        /// buffer is empty, or once the task was cancelled.
        public mutating func next() async -> PortMessage? { await feed.next() }
    }

    /// The iterator's hands the port back as it goes; the sequence's,
    /// only if no iterator was ever made.
    final class Owner: Sendable {
        private let feed: MessageStreamFeed
        private let isIterator: Bool
        init(_ feed: MessageStreamFeed, isIterator: Bool) {
            self.feed = feed
            self.isIterator = isIterator
        }
        deinit { feed.release(byIterator: isIterator) }
    }
}
