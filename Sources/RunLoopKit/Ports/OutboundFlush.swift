internal import CLinuxSupport
import Glibc
import ZeroMQ

/// Makes sure that what this process sent to other processes reaches them
/// even when it exits right after sending (a server that replies, then
/// exits). libzmq writes messages from its own I/O thread; a process that
/// exits first would lose what was still queued. So cross-process channels
/// use a context of their own, and at exit every one of them is closed and
/// that context terminated: zmq_ctx_term returns once each closed socket has
/// sent what it accepted, or after its linger (2 s) at most.
final class OutboundFlush: @unchecked Sendable {
    // @unchecked Sendable: `channels` and `installed` are guarded by `lock`.
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
    private let lock = Lock()
    private struct WeakChannel { weak var channel: SendChannel? }
    // Guarded by lock.
    private var channels: [ObjectIdentifier: WeakChannel] = [:]
    // Guarded by lock.
    private var installed = false
    // Guarded by lock: run first at exit (the tap sends what it has queued).
    private var beforeClosing: [@Sendable () -> Void] = []

    func track(_ channel: SendChannel) {
        lock.withLock {
            channels[ObjectIdentifier(channel)] = WeakChannel(channel: channel)
            if channels.count % 256 == 0 { channels = channels.filter { $0.value.channel != nil } }
        }
        installAtExit()
    }

    /// Runs `body` at exit before the channels close and the context terminates.
    func atExit(_ body: @escaping @Sendable () -> Void) {
        lock.withLock { beforeClosing.append(body) }
        installAtExit()
    }

    private func installAtExit() {
        let install: Bool = lock.withLock {
            defer { installed = true }
            return !installed
        }
        if install { atexit { OutboundFlush.shared.flushAtExit() } }
    }

    /// How long an exiting process waits for its peers to read what it sent.
    static let exitWaitSeconds: TimeInterval = 10

    private func flushAtExit() {
        let (first, open) = lock.withLock { (beforeClosing, channels.values.compactMap(\.channel)) }
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
