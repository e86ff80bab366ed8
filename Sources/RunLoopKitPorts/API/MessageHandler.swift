@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What a port's handler is: one that gets each message as a `PortMessage`
/// (`Port.setMessageHandler`), or one that reads it in place
/// (`Port.setInPlaceMessageHandler`). A port has one at a time.
enum MessageHandler {
    case message(@Sendable (PortMessage) -> Void)
    case inPlace(@Sendable (borrowing PortMessageView) -> Void)
}
