internal import CLinuxSupport
import Glibc
import Logging
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// What this process sent to other processes reaches them even when it
/// exits right after sending (a server that replies, then exits), within
/// the exit bound (S-PORT-4; `Port.exitBound`, docs/ports.md, "Process
/// exit"). libzmq writes messages from its own I/O thread; a process that
/// exits first would lose what was still queued.
///
/// So cross-process channels (and an ipc tap) use a context of their own,
/// and at exit, within one deadline: the tap sends its last events; the
/// process waits until libzmq has written every message the channels
/// accepted and the receivers have read every byte written (the kernel's
/// count, SIOCOUTQ), or the deadline; then every socket closes with a
/// linger of what is left and the context is terminated, which waits for
/// that linger at most. What is still unwritten at the deadline is logged
/// with its count. The shared context of in-process ports is never
/// terminated: the process's own threads may still use it, and what it
/// carries dies with the process anyway.
final class OutboundFlush: Sendable {
    static let shared = OutboundFlush()
    private static let logger = Logger(label: "RunLoopKit.Port")

    let context: ZMQContext = {
        do {
            // Blocky: terminating waits for each closed socket's linger at
            // most, which the exit sets to what is left of the bound.
            return try ZMQContext(blockyTermination: true)
        } catch {
            fatalError("RunLoopKit: cannot create the ZeroMQ context for cross-process sends: \(error)")
        }
    }()
    private struct WeakChannel { weak var channel: SendChannel? }

    private struct State {
        var channels: [ObjectIdentifier: WeakChannel] = [:]
        var installed = false
        /// Run first at exit with the linger left (the tap sends what it
        /// has queued).
        var beforeClosing: [@Sendable (Int32) -> Void] = []
    }

    private let state = Locked(State())

    func track(_ channel: SendChannel) {
        state.withLock { state in
            state.channels[ObjectIdentifier(channel)] = WeakChannel(channel: channel)
            if state.channels.count % 256 == 0 { state.channels = state.channels.filter { $0.value.channel != nil } }
        }
        installAtExit()
    }

    /// Runs `body` at exit before the channels close and the context
    /// terminates, with the milliseconds left of the exit bound.
    func atExit(_ body: @escaping @Sendable (Int32) -> Void) {
        state.withLock { $0.beforeClosing.append(body) }
        installAtExit()
    }

    private func installAtExit() {
        let install: Bool = state.withLock { state in
            defer { state.installed = true }
            return !state.installed
        }
        if install { atexit { OutboundFlush.shared.flushAtExit() } }
    }

    /// What was still unwritten when the exit bound ran out.
    struct Leftover {
        /// Messages accepted by a channel that libzmq had not written, by destination.
        var messages: [(port: String, count: Int)] = []
        /// Channels whose last message was too large to count: libzmq may hold it still.
        var uncountedChannels = 0
        /// Bytes written that the receivers had not read.
        var bytes: Int64 = 0
        /// Channels a sender held through the bound (their counts unknown).
        var busyChannels = 0

        var isEmpty: Bool { messages.isEmpty && uncountedChannels == 0 && bytes == 0 && busyChannels == 0 }
    }

    /// Waits until what the channels accepted is written and read, or
    /// until `deadline`; closes nothing (`Port.flushOutbound`).
    func flush(until deadline: UInt64) -> Leftover {
        let open = state.withLock { $0.channels.values.compactMap(\.channel) }
        return waitUntilWritten(open, deadline: deadline)
    }

    private func flushAtExit() {
        let started = MonotonicClock.now()
        let bound = ExitBound.nanoseconds
        let deadline = started &+ min(bound, UInt64.max / 2)
        let (first, open) = state.withLock { ($0.beforeClosing, $0.channels.values.compactMap(\.channel)) }
        for body in first { body(Self.millisecondsLeft(until: deadline)) }
        let unwritten = waitUntilWritten(open, deadline: deadline)
        var busy = 0
        for channel in open {
            // A channel known to hold nothing closes at once (a connection
            // still being made has nothing to carry); any other lingers for
            // what is left of the bound, and the context's termination below
            // returns as soon as libzmq has written it all.
            let linger = channel.unwritten()?.isEmpty == true ? 0 : Self.millisecondsLeft(until: deadline)
            if !channel.closeForExit(lingerMilliseconds: linger, waitingUntil: deadline) { busy += 1 }
        }
        if busy == 0 {
            // Every socket of the context is closed: terminating waits for
            // their linger, what is left of the bound, at most.
            context.terminate()
        }
        // Otherwise a sender holds a channel still: its socket stays open,
        // and terminating would wait for it forever; the process ends anyway.
        var report = unwritten
        report.busyChannels = max(report.busyChannels, busy)
        if !report.isEmpty { Self.logLoss(report, after: MonotonicClock.now() &- started, bound: bound) }
    }

    /// Waits until every channel's messages are written and read (steadily
    /// for a few checks: libzmq's I/O thread may still be moving queued
    /// messages into a socket), or the deadline; returns what was left.
    ///
    /// Why read, not only written: libzmq on the receiving side drops what
    /// is still in the kernel socket when the sender hangs up while the
    /// receiver is paused at its high-water mark (its stream engine turns
    /// the hang-up into an error once input resumes).
    private func waitUntilWritten(_ channels: [SendChannel], deadline: UInt64) -> Leftover {
        var quietChecks = 0
        while true {
            var left = Leftover()
            var anyAccepted = false
            for channel in channels {
                guard let held = channel.unwritten() else {
                    left.busyChannels += 1
                    continue
                }
                if held.messages > 0 { left.messages.append((channel.address.description, held.messages)) }
                if !held.isCounted { left.uncountedChannels += 1 }
                anyAccepted = anyAccepted || held.hasAccepted
            }
            // The kernel's count covers every Unix socket of the process, a
            // handshake to a peer that never reads included: it matters only
            // once a channel has sent a message.
            left.bytes = anyAccepted || left.busyChannels > 0 ? rlk_unread_unix_socket_bytes() : 0
            // A channel whose last message went uncounted cannot say when
            // it is written: the kernel's count and the linger decide.
            let settled = left.messages.isEmpty && left.bytes == 0 && left.busyChannels == 0
            quietChecks = settled ? quietChecks + 1 : 0
            if quietChecks >= 10 { return Leftover() }
            if MonotonicClock.now() >= deadline { return left }
            usleep(1_000)
        }
    }

    static func millisecondsLeft(until deadline: UInt64) -> Int32 {
        let now = MonotonicClock.now()
        guard deadline > now else { return 0 }
        return Int32(clamping: (deadline - now + 999_999) / 1_000_000)
    }

    private static func logLoss(_ unwritten: Leftover, after elapsed: UInt64, bound: UInt64) {
        var parts: [String] = []
        let messages = unwritten.messages.reduce(0) { $0 + $1.count }
        if messages > 0 {
            let ports = unwritten.messages.map { "\($0.count) to \($0.port)" }.joined(separator: ", ")
            parts.append("\(messages) message(s) accepted but not written are lost (\(ports))")
        }
        if unwritten.bytes > 0 {
            parts.append("\(unwritten.bytes) byte(s) written were not yet read by their receivers (lost if a receiver does not read them before it sees this process go)")
        }
        if unwritten.uncountedChannels > 0 {
            parts.append("\(unwritten.uncountedChannels) channel(s) may still have held messages over \(SendChannel.pooledFrameBytes) bytes, which libzmq does not count (lost if so)")
        }
        if unwritten.busyChannels > 0 {
            parts.append("\(unwritten.busyChannels) channel(s) were held by a sending thread throughout (what they queued is lost, not counted)")
        }
        logger.error("exit: stopped waiting for other processes after \(elapsed / 1_000_000) ms (the exit bound is \(bound / 1_000_000) ms: Port.exitBound, RUNLOOPKIT_EXIT_BOUND): \(parts.joined(separator: "; "))")
    }
}
