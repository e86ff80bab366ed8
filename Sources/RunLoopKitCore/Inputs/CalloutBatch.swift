import Synchronization

/// What one step 9 allows a socket source (S-SRC1-1): a port may deliver
/// several queued messages in one callout, up to `limit`, and asks
/// `mayContinue()` after each, so that what a caller can observe stays as
/// in CFRunLoop. The loop makes one per callout, on its thread.
///
/// Inlinable, behind the `RunLoopKitInternals` SPI as `Locked` is: a port asks
/// `mayContinue()` after every message of a batch.
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
    /// The loop's item version when the batch began: while it is unchanged,
    /// the source is still in the running mode without a look.
    @usableFromInline let itemsVersion: UInt64

    init(limit: Int, loop: RunLoop, source: SocketSource, mode: RunLoop.Mode) {
        self.limit = limit
        self.loop = loop
        self.source = source
        self.mode = mode
        itemsVersion = loop.itemsVersion.load(ordering: .acquiring)
    }

    /// After an event: may the batch go on? Not after a stop requested from
    /// any thread (S-RUN-4), nor once the source was invalidated or left
    /// the running mode (the rest waits, S-SRC1-2, or goes with the port,
    /// S-PORT-5).
    @inlinable
    package func mayContinue() -> Bool {
        if loop.isStopPending || !source.isValid { return false }
        if loop.itemsVersion.load(ordering: .acquiring) == itemsVersion { return true }
        // Something changed: a look at the mode (items added to `.common`
        // are in every common mode's own list too).
        return loop.holdsSource(source, inMode: mode)
    }
}
