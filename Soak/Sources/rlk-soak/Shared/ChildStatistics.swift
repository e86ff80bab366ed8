/// What one child did, as reported at the end.
struct ChildStatistics: Codable, Sendable {
    var messagesSent = 0
    var messagesReceived = 0
    var sendTimeouts = 0
    var streamsOpened = 0
    var streamsClosedWithMarker = 0
    /// Streams whose end-of-stream marker arrived and matched, message for message.
    var streamsVerifiedByMarker = 0
    var streamsEndedByInvalidDestination = 0
    var workerRestarts = 0
    var endpointInvalidations = 0
    var handlerSwaps = 0
    var nestedRuns = 0
    var batchLimitChanges = 0
    /// Messages from a killed process that arrived after its death was known.
    var lateMessagesFromDead = 0

    mutating func add(_ other: ChildStatistics) {
        messagesSent += other.messagesSent
        messagesReceived += other.messagesReceived
        sendTimeouts += other.sendTimeouts
        streamsOpened += other.streamsOpened
        streamsClosedWithMarker += other.streamsClosedWithMarker
        streamsVerifiedByMarker += other.streamsVerifiedByMarker
        streamsEndedByInvalidDestination += other.streamsEndedByInvalidDestination
        workerRestarts += other.workerRestarts
        endpointInvalidations += other.endpointInvalidations
        handlerSwaps += other.handlerSwaps
        nestedRuns += other.nestedRuns
        batchLimitChanges += other.batchLimitChanges
        lateMessagesFromDead += other.lateMessagesFromDead
    }
}
