// Foundation's shape for ports (docs/design.md, "Foundation's names keep Foundation's meaning"):
// sendPort and receivePort as NSPortMessage documents them (S-PORT-3),
// RunLoop.add(_ port:forMode:), port.schedule(on: LoopThread), invalidation
// handler tokens.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Ports in Foundation's shape (S-PORT-1, S-PORT-3, S-PORT-5)", .blocksThreads)
struct PortFoundationShapeTests {
    @Test("S-PORT-3: an outgoing message's sendPort is its destination and receivePort where replies arrive; received, they swap roles")
    func sendAndReceivePorts() throws {
        let server = try InboxPort("pfs-server")
        defer { server.close() }
        let replies = try Port(transport: .inproc)
        defer { replies.invalidate() }
        let outgoing = PortMessage(sendPort: server.port, receivePort: replies, components: [.data(Data("hi".utf8))])
        #expect(outgoing.msgid == 0 && !outgoing.isIncoming)
        #expect(outgoing.sendPort === server.port && outgoing.receivePort === replies && outgoing.replyPort === replies)
        try outgoing.send(before: portDeadline())
        #expect(server.inbox.waitForCount(1))
        let received = try #require(server.inbox.messages.first)
        #expect(received.isIncoming)
        #expect(received.sendPort === replies, "incoming: the port replies go through")
        #expect(received.receivePort === server.port, "incoming: the port it arrived on")
        #expect(received.replyPort === replies)
        #expect(received.dataComponents == [Data("hi".utf8)])
    }

    @Test("S-PORT-1: RunLoop.add(_ port:forMode:) schedules like port.schedule(in:forMode:), remove unschedules; port.schedule(on:) takes a LoopThread")
    func foundationScheduling() throws {
        let (thread, loop) = try makePortLoopThread("pfs-add")
        defer { thread.stop() }
        let inbox = PortInbox()
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        port.setMessageHandler(inbox.handler)
        loop.add(port, forMode: .default)
        try port.send(msgid: 1, before: portDeadline())
        #expect(inbox.waitForCount(1))
        loop.remove(port, forMode: .default)
        try port.send(msgid: 2, before: portDeadline())
        // Unscheduled, the message waits in the port (S-SRC1-2) until it is
        // scheduled again, this time on the LoopThread directly.
        let other = PortInbox()
        let second = try Port(transport: .inproc)
        defer { second.invalidate() }
        second.setMessageHandler(other.handler)
        try second.schedule(on: thread)
        try second.send(msgid: 3, before: portDeadline())
        #expect(other.waitForCount(1))
        #expect(inbox.msgids == [1], "a removed port delivered")
        try port.schedule(on: thread)
        #expect(inbox.waitForCount(2))
        #expect(inbox.msgids == [1, 2])
    }

    @Test("S-KEEP-1: port.schedule(on:) throws the LoopThread's errors before start and after stop")
    func scheduleOnThreadErrors() throws {
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let thread = LoopThread(name: "pfs-states")
        #expect(throws: PortError.runLoop(.notStarted(threadName: "pfs-states"))) { try port.schedule(on: thread) }
        try thread.start()
        thread.stop()
        #expect(throws: PortError.runLoop(.loopGone(threadName: "pfs-states"))) { try port.schedule(on: thread) }
    }

    @Test("S-PORT-1: RunLoop.add(_ port:forMode:) with a send right traps and names the throwing form")
    func addingASendRightTraps() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let (thread, loop) = try makePortLoopThread("pfs-trap")
            _ = thread
            let sendRight = Port(sendRightTo: PortAddress(pid: 1, startTime: 1, portID: 1, ipcPath: nil))
            loop.add(sendRight, forMode: .default)
        }
        let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
        #expect(stderr.contains("try port.schedule(in:forMode:)"), "\(stderr)")
    }

    @Test("S-PORT-5: invalidation handler tokens remove exactly their handler; on an invalid port the handler runs at once")
    func invalidationTokens() throws {
        let port = try Port(transport: .inproc)
        let calls = Locked<[String]>([])
        let kept = port.addInvalidationHandler { _ in calls.withLock { $0.append("kept") } }
        let removed = port.addInvalidationHandler { _ in calls.withLock { $0.append("removed") } }
        #expect(kept != removed)
        port.removeInvalidationHandler(removed)
        port.invalidate()
        #expect(calls.value == ["kept"])
        let late = port.addInvalidationHandler { _ in calls.withLock { $0.append("late") } }
        #expect(calls.value == ["kept", "late"], "a handler added to an invalid port runs at once")
        port.removeInvalidationHandler(late)  // removes nothing, harmlessly
    }
}
