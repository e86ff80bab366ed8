import RunLoopKit

/// A stream as its sender (one worker thread) keeps it: where it goes and
/// how many messages it has sent. A number is used only once a send of it
/// succeeded: a send that throws has sent nothing (S-PORT-4), so a failed
/// number is sent again, and a duplicate at the receiver would show a send
/// that threw having sent.
struct OutgoingStream {
    let key: StreamKey
    let destination: Port
    let destinationID: UInt64
    /// Set for a send right to another process's port.
    let remote: RemotePorts.Right?
    var sent: UInt64 = 0
    var ended = false

    var record: StreamRecord { StreamRecord(key: key, destination: destinationID, sent: sent) }
}
