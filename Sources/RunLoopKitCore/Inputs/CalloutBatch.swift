import Synchronization

/// What one step 9 allows a socket source (S-SRC1-1): a port may deliver
/// several queued messages in one callout, up to `limit`, and asks whether
/// the batch admits each once it is read (`admission()`, `admits()`), so
/// that what a caller can observe stays as in CFRunLoop. The loop makes
/// one per callout, on its thread.
///
/// Inlinable, behind the `RunLoopKitInternals` SPI as `Locked` is: a port asks
/// it of every message of a batch.
@_spi(RunLoopKitInternals)
public struct CalloutBatch {
    /// At most this many events: 1 in a run with returnAfterSourceHandled,
    /// which then returns `handledSource` after exactly one message.
    public let limit: Int
    // unowned(unsafe): a batch lives only inside the callout of the loop
    // thread that made it, which holds both (the loop is running, the
    // source is on its ready list and in its snapshot); counted references
    // to them went through Swift's slow path (both have weak references
    // elsewhere) on every callout.
    // U-CALLOUT-BATCH (docs/unsafe-sites.md).
    @usableFromInline unowned(unsafe) let loop: RunLoop
    @usableFromInline unowned(unsafe) let source: SocketSource
    @usableFromInline let mode: RunLoop.Mode
    /// The loop's item version the batch last knew the source to be in the
    /// running mode at: the pass's snapshot's at first, then that of the
    /// last look (`admits()`). While it is unchanged, no look is needed.
    @usableFromInline var itemsVersion: UInt64

    /// What a socket source's callout did.
    package struct Outcome {
        /// It handled an event: delivered or dropped a message (a plain
        /// socket or fd source's handler always counts as one). False when
        /// a port's batch was refused its first message (S-SRC1-2: a stop,
        /// a remove or an invalidate since the pass looked): the pass then
        /// handled no source (S-RUN-2, step 11).
        package var handled: Bool
        /// Its queue ran dry: the empty receive re-armed the socket's
        /// readiness signal, so the loop need not look again before epoll
        /// reports it.
        package var drained: Bool

        package init(handled: Bool, drained: Bool) {
            self.handled = handled
            self.drained = drained
        }

        /// A plain socket or fd source's handler ran.
        static let handlerRan = Outcome(handled: true, drained: false)
    }

    /// Whether the loop's epoll reported the source's descriptor since this
    /// was last asked (`SocketSource.takeDescriptorReport()`). Loop thread.
    @inlinable
    package func takeDescriptorReport() -> Bool { source.takeDescriptorReport() }

    init(limit: Int, loop: RunLoop, source: SocketSource, mode: RunLoop.Mode, snapshotVersion: UInt64) {
        self.limit = limit
        self.loop = loop
        self.source = source
        self.mode = mode
        itemsVersion = snapshotVersion
    }

    /// The batch's answer to one question, asked of each event once the
    /// port has read it and before it decodes or delivers it: may the batch
    /// deliver it? Not after a stop requested from any thread (S-RUN-4),
    /// nor once the source was invalidated or left the running mode (the
    /// event waits, S-SRC1-2, or goes with the port, S-PORT-5). Asked after
    /// the read, so that a stop, a remove or an invalidate that returned on
    /// another thread before a message was sent always keeps that message
    /// from this batch.
    public enum Admission {
        case admitted
        case refused
        /// The loop's items changed since the batch last knew: only a look
        /// at the mode can tell (`admits()`).
        case undecided
    }

    /// The admission from atomics alone, for a port that asks with its
    /// receiver's lock held, where the loop's lock must not be taken.
    @inlinable
    package func admission() -> Admission {
        if loop.isStopPending || !source.isValid { return .refused }
        if loop.itemsVersion.load(ordering: .acquiring) == itemsVersion { return .admitted }
        return .undecided
    }

    /// The admission decided, with a look at the mode when the atomics
    /// cannot tell (items added to `.common` are in every common mode's own
    /// list too). A look that finds the source still there remembers the
    /// version it looked at: a later change bumps it again.
    @inlinable
    package mutating func admits() -> Bool {
        switch admission() {
        case .admitted: return true
        case .refused: return false
        case .undecided:
            let version = loop.itemsVersion.load(ordering: .acquiring)
            guard loop.holdsSource(source, inMode: mode) else { return false }
            itemsVersion = version
            return true
        }
    }
}
