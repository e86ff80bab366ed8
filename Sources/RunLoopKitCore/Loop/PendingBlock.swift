/// A block queued with `perform` (S-BLK-1): it runs once, or, if its loop
/// goes first or its tag is cancelled, `discarded` tells whoever waits for
/// it why (`.loopGone`, `.cancelled`).
struct PendingBlock {
    let modes: ModeSelector
    let body: @Sendable () -> Void
    let discarded: (@Sendable (RunLoopError) -> Void)?
    /// Who queued it, for the monitor's `CalloutReport.origin`.
    let origin: BlockOrigin

    /// Foundation's performer order: at a block step, lower orders run
    /// first, equal orders in the order queued. 0 for a plain perform.
    var order: Int {
        if case let .ordered(ordered) = modes { return ordered.order }
        return 0
    }

    /// The handle that may cancel it before it starts; nil for a plain perform.
    var request: PerformRequest? {
        if case let .ordered(ordered) = modes { return ordered.request }
        return nil
    }
}

/// Where a block or a delayed perform was queued: the caller's tag, and the
/// `#fileID` and `#line` of the call. Kept raw (a `StaticString` and a
/// `UInt`, neither of which allocates; a nil tag does not either), so that
/// queuing a block costs nothing more while no monitor is set; the public
/// `RunLoop.CalloutOrigin`, which makes a `String` of the file, is built only
/// when a monitor is about to be told.
struct BlockOrigin: Sendable {
    let tag: String?
    let file: StaticString
    let line: UInt

    /// The form a monitor sees. Makes a `String`: call it only for a monitor.
    var calloutOrigin: RunLoop.CalloutOrigin {
        RunLoop.CalloutOrigin(tag: tag, file: file.withUTF8Buffer { String(decoding: $0, as: UTF8.self) }, line: line)
    }
}
