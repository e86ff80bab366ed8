import Glibc
import RunLoopKit

/// The `rlk-peer` child: RunLoopKit's side of the ipc scenarios in the
/// other process. It registers an ipc port under the name it was given and
/// serves it on its main thread's loop: pings are echoed to the reply port,
/// data messages are counted and each end-of-batch is answered with the
/// count, quit ends it; so does a minute without any message (the parent
/// is stuck; a dead parent kills it at once through PR_SET_PDEATHSIG).
enum RLKPeerChild {
    /// Counts on the main thread only.
    final class Tally: @unchecked Sendable {
        var count: UInt64 = 0
        /// The last reply port seen by `pingKeepingReplyPort`, held strongly.
        var keptReplyPort: Port?
        /// Messages seen: the watchdog reads the clock, not each message
        /// (raw libzmq's child reads none per message either).
        var messages: UInt64 = 0
        /// The watchdog's last look: `messages` then, and when it last grew.
        var messagesAtLastLook: UInt64 = 0
        var lastActivity = monotonicNanoseconds()
    }

    /// The tcp ports a child serves besides its ipc port: `count` of them
    /// behind one endpoint on 127.0.0.1, the parent fetching them with
    /// `tcpPorts` requests over ipc.
    struct TCPPorts {
        let security: TCPEndpoint.Security
        let count: Int
    }

    /// Without a message for this long, the child exits.
    static let idleLimitSeconds = 60.0

    static func serve(name: String, tcp: TCPPorts? = nil) -> Int32 {
        // The echo serves on its main thread: scheduled as a LoopThread is.
        BenchLoopScheduling.chosen.applyToCurrentThread()
        let loop = RunLoop.current
        let tally = Tally()
        let port: Port
        var tcpPorts: [Port] = []
        do {
            port = try Port(transport: .ipc)
            for _ in 0..<(tcp?.count ?? 0) {
                tcpPorts.append(try Port(transport: .tcp(.listening(on: "127.0.0.1", security: tcp!.security))))
            }
            let served = tcpPorts
            let handler: @Sendable (PortMessage) -> Void = { message in
                tally.messages &+= 1
                do {
                    switch message.msgid {
                    case ChildRoles.Msgid.ping:
                        try message.replyPort?.send(msgid: ChildRoles.Msgid.pong, components: message.components, before: .distantFuture)
                    case ChildRoles.Msgid.pingKeepingReplyPort:
                        // The same echo, but the send right to the reply port
                        // stays referenced between messages, so its sending
                        // socket (and ipc connection) is reused.
                        tally.keptReplyPort = message.replyPort
                        try message.replyPort?.send(msgid: ChildRoles.Msgid.pong, components: message.components, before: .distantFuture)
                    case ChildRoles.Msgid.data:
                        tally.count += 1
                    case ChildRoles.Msgid.endOfBatch:
                        var count = tally.count.littleEndian
                        tally.count = 0
                        let bytes = withUnsafeBytes(of: &count) { Data($0) }
                        try message.replyPort?.send(msgid: ChildRoles.Msgid.endOfBatch, components: [.data(bytes)], before: Date() + 10)
                    case ChildRoles.Msgid.tcpPorts:
                        let from = message.dataComponents.first.map { data in
                            data.withUnsafeBytes { Int(UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self))) }
                        } ?? 0
                        let ports = served.dropFirst(from).prefix(250).map { PortMessage.Component.port($0) }
                        try message.replyPort?.send(msgid: ChildRoles.Msgid.tcpPorts, components: ports, before: Date() + 10)
                    case ChildRoles.Msgid.quit:
                        try? message.replyPort?.send(msgid: ChildRoles.Msgid.quit, before: Date() + 1)
                        loop.stop()
                    default:
                        break
                    }
                } catch {
                    FileHandleOut.error("rlk-peer: reply failed: \(error)")
                }
            }
            port.setMessageHandler(handler)
            try port.schedule(in: loop, forMode: .default)
            for tcpPort in tcpPorts {
                tcpPort.setMessageHandler(handler)
                try tcpPort.schedule(in: loop, forMode: .default)
            }
            try PortNameServer.register(port, name: name)
            // Checks every 5 s; the wake-up costs the measurements nothing visible.
            let watchdog = try Timer(timeInterval: 5, repeats: true) { _ in
                if tally.messages != tally.messagesAtLastLook {
                    tally.messagesAtLastLook = tally.messages
                    tally.lastActivity = monotonicNanoseconds()
                } else if secondsSince(tally.lastActivity) > idleLimitSeconds {
                    FileHandleOut.error("rlk-peer: no message for \(Int(idleLimitSeconds)) s; exiting")
                    loop.stop()
                }
            }
            loop.add(watchdog, forMode: .default)
        } catch {
            FileHandleOut.error("rlk-peer: set-up failed: \(error)")
            return 1
        }
        loop.runUntilStopped()
        port.invalidate()
        for tcpPort in tcpPorts { tcpPort.invalidate() }
        return 0
    }
}
