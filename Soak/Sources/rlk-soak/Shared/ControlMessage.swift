import RunLoopKit

/// What the coordinator and its children say to each other, over their
/// control ports (ipc, the coordinator's found by name): JSON in one data
/// component. The traffic under test never goes this way.
enum ControlMessage: Codable, Sendable {
    // Child to coordinator.
    case hello(incarnation: UInt32, pid: Int32)
    case endpointsChanged(incarnation: UInt32, added: [DirectoryEntry], removed: [UInt64])
    /// Quiet; with the names of the ballast it hosts, if asked to host one.
    case paused(incarnation: UInt32, ballast: [String])
    case sample(incarnation: UInt32, ResourceSample)
    case stopReport(StopReport)
    case drainReport(DrainReport)
    case failure(incarnation: UInt32, String)
    /// Carries one of the first child's ballast ports as its reply port, to
    /// fill the coordinator's control port's cache of descriptors.
    case descriptorBallast

    // Coordinator to child.
    case directory(Directory)
    /// Come to the quiet state of a checkpoint: look up every name of
    /// `lookUp` (the other children's control ports, so that every live
    /// process is watched, then the coordinator's ballast, which fills the
    /// send-right cache); host a ballast of your own if `host`.
    case pause(lookUp: [String], host: Bool, tag: String)
    case measure
    case resume
    case stopSending
    case drain([Expectation])
    case exit

    static let msgid: UInt32 = 100

    func send(to port: Port, timeout: Double = 5) throws {
        let bytes = try JSONEncoder().encode(self)
        try port.send(msgid: Self.msgid, components: [.data(bytes)], before: Date() + timeout)
    }

    /// Sends with `replyPort` as the message's reply port (the child's hello
    /// carries its control port that way).
    func send(to port: Port, replyPort: Port, timeout: Double = 5) throws {
        let bytes = try JSONEncoder().encode(self)
        try port.send(msgid: Self.msgid, components: [.data(bytes)], replyPort: replyPort, before: Date() + timeout)
    }

    init(_ message: PortMessage) throws {
        guard message.msgid == Self.msgid, let bytes = message.dataComponents.first else {
            throw ControlError.malformed("msgid \(message.msgid) with \(message.components.count) components")
        }
        self = try JSONDecoder().decode(ControlMessage.self, from: bytes)
    }
}

enum ControlError: Error, CustomStringConvertible {
    case malformed(String)
    case timedOut(String)

    var description: String {
        switch self {
        case let .malformed(what): "malformed control message: \(what)"
        case let .timedOut(what): "timed out: \(what)"
        }
    }
}

/// A receiving port other processes may send to, by name.
struct DirectoryEntry: Codable, Sendable, Hashable {
    var name: String
    var endpointID: UInt64
}

/// What the coordinator tells every child a few times a second: the named
/// ports alive as far as it knows, and the incarnations it has killed.
struct Directory: Codable, Sendable {
    var entries: [DirectoryEntry]
    var deadIncarnations: [UInt32]
}

/// One stream as its sender left it when it stopped sending.
struct StreamRecord: Codable, Sendable {
    var key: StreamKey
    var destination: UInt64
    var sent: UInt64
}

/// A child's answer to `stopSending`: its open streams, the receiving
/// ports alive in it, and the ports of other processes it saw invalid
/// while the directory still listed them (candidates for a false
/// invalidation, decided by the coordinator).
struct StopReport: Codable, Sendable {
    var incarnation: UInt32
    var streams: [StreamRecord]
    var liveEndpoints: [UInt64]
    var suspectedEndpoints: [UInt64]
}

/// A stream that lived to the end, as the receiver must find it.
struct Expectation: Codable, Sendable {
    var destination: UInt64
    var key: StreamKey
    var sent: UInt64
}

/// What a receiver found for one expectation.
struct ExpectationResult: Codable, Sendable {
    var expectation: Expectation
    /// Messages received in order (the next sequence number it waits for).
    var received: UInt64
    /// Duplicates, reorderings and gaps seen on the stream.
    var violations: Int
}

/// How the send rights of one process to the ports of one other process
/// learnt of its death.
struct NoticeRecord: Codable, Sendable {
    /// The child whose ports these send rights name (its pid may be reused).
    var incarnation: UInt32
    var pid: Int32
    /// Send rights to the process's ports this child held (and had not let go).
    var held: Int
    /// Of those, how many were seen invalid (invalidation handler or a send
    /// failing with `.peerDied`).
    var noticed: Int
    /// The last of those notices (CLOCK_MONOTONIC, ns).
    var latestNotice: UInt64
    /// Notices that came first from a failed send rather than the handler.
    var noticedBySend: Int
}

/// A child's answer to `drain`.
struct DrainReport: Codable, Sendable {
    var incarnation: UInt32
    var results: [ExpectationResult]
    var drainSeconds: Double
    var drainComplete: Bool
    var statistics: ChildStatistics
    var notices: [NoticeRecord]
    var violationCount: Int
    var violationSamples: [String]
}
