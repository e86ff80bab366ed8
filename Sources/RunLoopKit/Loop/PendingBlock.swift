/// A block queued with `perform` (S-BLK-1): it runs once, or, if its loop
/// goes first, `discarded` tells whoever waits for it.
struct PendingBlock {
    let modes: ModeSelector
    let body: @Sendable () -> Void
    let discarded: (@Sendable () -> Void)?
}
