import Glibc
import Synchronization
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Per thread: the reply ports of `sendRequest`, one per nesting level and
/// transport, and the reply each level waits for. Used by its thread only.
final class RequestContext: @unchecked Sendable {
    // @unchecked Sendable: confined to one thread (the reply handlers run on
    // it too, inside its own private-mode runs).
    private var level = 0
    private var replyPorts: [Int: [Port.Transport: Port]] = [:]
    private var replies: [Int: PortMessage] = [:]
    /// Each level's snapshot of its private mode, kept from request to
    /// request: a fresh one costs a copy of the mode's items and
    /// allocations on every request. It holds only that mode's items (the
    /// level's reply ports, which this context owns).
    private var snapshots: [Int: ModeSnapshot] = [:]

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            guard let pointer else { return }
            // U-REQUEST-SLOT (docs/unsafe-sites.md).
            let context = Unmanaged<RequestContext>.fromOpaque(pointer).takeRetainedValue()
            for ports in context.replyPorts.values { for port in ports.values { port.invalidate() } }
        }
        return key
    }()

    static func current() -> RequestContext {
        // U-REQUEST-SLOT (docs/unsafe-sites.md).
        if let pointer = pthread_getspecific(key) { return Unmanaged<RequestContext>.fromOpaque(pointer).takeUnretainedValue() }
        let context = RequestContext()
        pthread_setspecific(key, Unmanaged.passRetained(context).toOpaque())
        return context
    }

    /// The private mode of each nesting level, named once, not per request.
    private var modes: [RunLoop.Mode] = []

    func mode(level: Int) -> RunLoop.Mode {
        while modes.count < level { modes.append(RunLoop.Mode("com.runloopkit.request.\(modes.count + 1)")) }
        return modes[level - 1]
    }

    func enter() -> Int { level += 1; return level }
    func leave() { level -= 1 }
    func clearReply(_ level: Int) { replies[level] = nil }
    func takeReply(_ level: Int) -> PortMessage? { replies.removeValue(forKey: level) }

    func replyPort(level: Int, transport: Port.Transport, loop: RunLoop, mode: RunLoop.Mode) throws(PortError) -> Port {
        if let port = replyPorts[level]?[transport], port.isValid { return port }
        let port = try Port(transport: transport)
        port.setMessageHandler { [self] reply in replies[level] = reply }
        try port.schedule(in: loop, forMode: mode)
        replyPorts[level, default: [:]][transport] = port
        return port
    }

    func discardReplyPort(level: Int, transport: Port.Transport) {
        replyPorts[level]?[transport]?.invalidate()
        replyPorts[level]?[transport] = nil
        snapshots[level] = nil
    }

    /// One run of `level`'s private mode on `loop`, from the snapshot the
    /// level's last run left. The snapshot is taken out for the run, since
    /// a handler may make a request of its own (the next level) meanwhile.
    func runPrivateMode(level: Int, on loop: RunLoop, deadline: UInt64) {
        var snapshot = snapshots.removeValue(forKey: level) ?? ModeSnapshot()
        // On the real clock even on a test-clock loop (S-TMR-7): it
        // bounds a wait on another thread or process.
        _ = loop.runOnce(mode: mode(level: level), deadline: deadline, deadlineOnRealClock: true,
                         returnAfterSourceHandled: true, reusing: &snapshot)
        snapshots[level] = snapshot
    }
}
