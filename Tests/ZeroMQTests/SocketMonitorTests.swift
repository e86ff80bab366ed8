import Glibc
import Testing
import ZeroMQ
import RunLoopKitTestSupport

/// A socket monitor of some kinds of event only: what a monitor read
/// seldom uses (the tap's watch of an explicit reader's connection).
@Suite(.blocksThreads)
struct SocketMonitorTests {
    @Test("a monitor of .connected and .disconnected only reports a connection's start and end, and none of the other events libzmq has for it (the connect's delay, the handshake, the close)")
    func aMonitorOfSomeKindsReportsOnlyThose() throws {
        let context = try ZMQContext()
        defer { context.terminate() }
        let pull = try context.makeSocket(.pull)
        try pull.bind("tcp://127.0.0.1:*")
        let endpoint = try #require(pull.lastEndpoint)
        let push = try context.makeSocket(.push)
        let monitor = try SocketMonitor(watching: push, in: context, only: [.connected, .disconnected])
        try push.connect(endpoint)

        var seen = try events(of: monitor, until: { $0.contains(.connected) })
        // The handshake is done once a message goes through; its event,
        // had it been reported, is queued before the message arrives.
        _ = try push.send("one")
        try pull.setReceiveTimeout(milliseconds: 10_000)
        #expect(try pull.receiveMultipart()?.count == 1)
        pull.close()
        seen += try events(of: monitor, until: { $0.contains(.disconnected) })
        #expect(seen == [.connected, .disconnected], "\(seen)")

        // Stopped before the socket closes: no event comes after the
        // monitor's own close.
        try SocketMonitor.stop(monitoring: push)
        try push.setLinger(milliseconds: 0)
        push.close()
        monitor.close()
    }

    /// The kinds the monitor reports until `done` holds of them (10 s at most).
    private func events(of monitor: SocketMonitor, until done: ([SocketMonitor.Kind]) -> Bool) throws -> [SocketMonitor.Kind] {
        var kinds: [SocketMonitor.Kind] = []
        let deadline = ContinuousClock.now + .seconds(10)
        while !done(kinds) && ContinuousClock.now < deadline {
            while let event = try monitor.next(dontWait: true) { kinds.append(event.kind) }
            if done(kinds) { break }
            var poller = pollfd(fd: try monitor.fileDescriptor, events: Int16(POLLIN), revents: 0)
            _ = poll(&poller, 1, 20)
        }
        return kinds
    }
}
