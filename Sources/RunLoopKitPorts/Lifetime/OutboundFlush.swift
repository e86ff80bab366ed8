internal import CLinuxSupport
import Glibc
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Makes sure that what this process sent to other processes reaches them
/// even when it exits right after sending (a server that replies, then
/// exits). libzmq writes messages from its own I/O thread; a process that
/// exits first would lose what was still queued. So cross-process channels
/// use a context of their own, and at exit every one of them is closed and
/// that context terminated: zmq_ctx_term returns once each closed socket has
/// sent what it accepted, or after its linger (2 s) at most.
final class OutboundFlush: Sendable {
    static let shared = OutboundFlush()

    let context: ZMQContext = {
        do {
            // Blocky: terminating waits, for at most each socket's linger
            // (2 s), until libzmq has written out what it accepted.
            return try ZMQContext(blockyTermination: true)
        } catch {
            fatalError("RunLoopKit: cannot create the ZeroMQ context for cross-process sends: \(error)")
        }
    }()
    private struct WeakChannel { weak var channel: SendChannel? }

    private struct State {
        var channels: [ObjectIdentifier: WeakChannel] = [:]
        var installed = false
        /// Run first at exit (the tap sends what it has queued).
        var beforeClosing: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())

    func track(_ channel: SendChannel) {
        state.withLock { state in
            state.channels[ObjectIdentifier(channel)] = WeakChannel(channel: channel)
            if state.channels.count % 256 == 0 { state.channels = state.channels.filter { $0.value.channel != nil } }
        }
        installAtExit()
    }

    /// Runs `body` at exit before the channels close and the context terminates.
    func atExit(_ body: @escaping @Sendable () -> Void) {
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

    /// How long an exiting process waits for its peers to read what it sent.
    static let exitWaitSeconds: TimeInterval = 10

    private func flushAtExit() {
        let (first, open) = state.withLock { ($0.beforeClosing, $0.channels.values.compactMap(\.channel)) }
        for body in first { body() }
        waitUntilPeersHaveRead()
        for channel in open { channel.closeForExit() }
        context.terminate()
    }

    /// libzmq drops what is still in the kernel socket when the peer hangs
    /// up while the receiving side is paused at its high-water mark (its
    /// stream engine turns the hang-up into an error once input resumes). So
    /// before closing, wait until the kernel says our peers have read every
    /// byte we wrote (SIOCOUTQ), steadily for a few milliseconds (libzmq's
    /// I/O thread may still be moving queued messages into the socket), or
    /// `exitWaitSeconds` at most.
    private func waitUntilPeersHaveRead() {
        let deadline = MonotonicClock.instant(secondsFromNow: Self.exitWaitSeconds)
        var quietChecks = 0
        while quietChecks < 10 && MonotonicClock.now() < deadline {
            quietChecks = rlk_unread_socket_bytes() == 0 ? quietChecks + 1 : 0
            usleep(1_000)
        }
    }
}
