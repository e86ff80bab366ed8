// Ports between processes: S-PORT-1 (any process of the user can send to an
// ipc port), S-PORT-2 (an inproc port cannot travel to another process) and
// S-PORT-3 (a port component or reply port arrives as a usable send right to
// the original). No loss, order and deadlines across processes (S-PORT-4)
// are PortIPCFlowTests'.
//
// The other process is a Swift Testing exit test (see
// Support/PortProcess+CrossProcess.swift): the test process registers a
// port under a name unique to the test in the default runtime directory,
// and the child looks it up (or the reverse).
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Ports across processes (S-PORT-1, S-PORT-2, S-PORT-3)", .blocksThreads)
struct PortIPCTests {
    // MARK: - S-PORT-1, S-PORT-3

    @Test("S-PORT-1, S-PORT-3: a child looks up a named port and sends data, a port component and a reply port; the reply and the sends to the component reach the child's original ports, and a port the parent sends back is usable by the child")
    func requestWithPortComponentsAcrossProcesses() async throws {
        let name = PortProcess.uniqueName("rt")
        let parentPID = getpid()
        // The parent's second port, sent to the child in the reply; the child sends to it.
        let back = try IPCInbox("ipc-rt-back")
        let handlerErrors = Locked<[String]>([])
        let server = try IPCInbox("ipc-rt") { [back] message in
            // On the server's loop thread: S-PORT-1 delivers here.
            guard message.msgid == 1 else { return }
            guard let component = PortProcess.ports(of: message).first, let reply = message.replyPort else {
                handlerErrors.withLock { $0.append("request without a port component or reply port: \(message)") }
                return
            }
            do {
                // S-PORT-3: the send right reaches the child's original port...
                try component.send(msgid: 101, components: [PortProcess.data("to the component")], before: Date() + 10)
                // ...and so does the reply, which carries the component back and a port of ours.
                try reply.send(
                    msgid: 1,
                    components: [PortProcess.data(PortProcess.text(of: message).uppercased()), .port(component), .port(back.port)],
                    before: Date() + 10)
            } catch {
                handlerErrors.withLock { $0.append("\(error)") }
            }
        }
        try PortNameServer.register(server.port, name: name)
        defer {
            server.close()
            back.close()
            PortProcess.removeNameFiles(name)
        }

        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String, parentPID = parentPID as Int32] in
            await PortChild.run { try await PortIPCTests.requestingChild(name: name, parentPID: parentPID) }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        let childPID = try #require(child.integer("pid").map(Int32.init), child.comment)

        #expect(await server.arrival(ofCount: 2), child.comment)
        #expect(await back.arrival(ofCount: 1), child.comment)
        #expect(handlerErrors.value == [])
        let messages = server.messages
        try #require(messages.count == 2, child.comment)

        let request = messages[0]
        #expect(request.msgid == 1)
        #expect(request.components.count == 2)
        #expect(PortProcess.text(of: request) == "hello across processes")
        // S-PORT-3, as NSPortMessage documents: receivePort is the port it
        // arrived on, sendPort the port replies go through (its reply port).
        #expect(request.receivePort === server.port, "a received message's receivePort is the port it arrived on")
        #expect(request.sendPort != nil && request.sendPort === request.replyPort, "a received message's sendPort is its reply port")
        let component = try #require(PortProcess.ports(of: request).first)
        #expect(!component.isLocal && component.transport == .ipc, "a port component is a send right: \(component)")
        #expect(component.ownerProcessID == childPID)
        let replyPort = try #require(request.replyPort)
        #expect(!replyPort.isLocal && replyPort.ownerProcessID == childPID)
        #expect(replyPort != component)
        // The same remote port, received twice, is one send right (one Port per remote port).
        #expect(messages[1].msgid == 2)
        #expect(PortProcess.ports(of: messages[1]).first === component)

        let viaBack = back.messages[0]
        #expect(viaBack.msgid == 7)
        #expect(PortProcess.text(of: viaBack) == "sent to the reply's port component")
        #expect(viaBack.receivePort === back.port)

        // The child has exited: the send rights to its ports go invalid (S-PORT-5).
        #expect(await PortProcess.waitUntil(timeout: 10) { !component.isValid && !replyPort.isValid })
    }

    /// The child's side: looks the parent's port up, sends a request with a
    /// port component, checks the reply and what reached its own port.
    static func requestingChild(name: String, parentPID: Int32) async throws {
        PortChild.report("pid", getpid())
        let server = try PortNameServer.lookup(name, timeout: .seconds(30))
        PortChild.check(server.ownerProcessID == parentPID, "the name's port belongs to \(server.ownerProcessID), not the parent \(parentPID)")
        PortChild.check(!server.isLocal && server.isValid && server.transport == .ipc, "lookup gave \(server)")

        let notices = try IPCInbox("child-notices")
        defer { notices.close() }
        let reply = try await PortProcess.onThread("child-request") {
            try server.sendRequest(
                msgid: 1, components: [PortProcess.data("hello across processes"), .port(notices.port)],
                sendTimeout: 10, receiveTimeout: 30)
        }
        PortChild.check(reply.msgid == 1, "reply msgid \(reply.msgid)")
        PortChild.check(PortProcess.text(of: reply) == "HELLO ACROSS PROCESSES", "reply text '\(PortProcess.text(of: reply))'")
        let ports = PortProcess.ports(of: reply)
        PortChild.check(reply.components.count == 3 && ports.count == 2, "reply components \(reply.components)")
        guard ports.count == 2 else { return }
        // S-PORT-3: our own port, back from the other process, is the very same object.
        PortChild.check(ports[0] === notices.port, "our port came back as \(ports[0]), not as itself")
        let back = ports[1]
        PortChild.check(!back.isLocal && back.isValid && back.transport == .ipc && back.ownerProcessID == parentPID,
                        "the parent's port arrived as \(back)")

        // What the parent sent to the send right it got reached our port.
        PortChild.check(notices.wait(forCount: 1), "nothing reached the port sent as a component")
        if let notice = notices.messages.first {
            PortChild.check(notice.msgid == 101 && PortProcess.text(of: notice) == "to the component", "notice \(notice)")
            PortChild.check(notice.receivePort === notices.port && notice.replyPort == nil && notice.sendPort == nil, "notice \(notice)")
        }

        // The parent's port, received as a component, is usable here.
        try back.send(msgid: 7, components: [PortProcess.data("sent to the reply's port component")], before: Date() + 10)
        // The same port of ours again: the parent must resolve it to the same send right.
        try server.send(msgid: 2, components: [.port(notices.port)], before: Date() + 10)
    }

    // MARK: - S-PORT-2

    @Test("S-PORT-2: a child's send to the parent's port with an inproc port as component or reply port fails at send time with .componentNotTransferable and sends nothing; ipc ports go through")
    func inprocPortRefusedFromChildToParent() async throws {
        let name = PortProcess.uniqueName("np")
        let server = try IPCInbox("ipc-np")
        try PortNameServer.register(server.port, name: name)
        defer {
            server.close()
            PortProcess.removeNameFiles(name)
        }

        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String] in
            await PortChild.run {
                let failures = try await PortProcess.onThread("child-np") {
                    try PortIPCTests.refuseInprocPorts(to: try PortNameServer.lookup(name, timeout: .seconds(30)))
                }
                for failure in failures { PortChild.fail(failure) }
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()

        // Messages from one sender arrive in order: had a refused send gone
        // out, it would have arrived before the last one.
        #expect(await server.arrival(ofCount: 1), child.comment)
        let messages = server.messages
        #expect(messages.map(\.msgid) == [100], "only the message with ipc ports was sent: \(messages)")
        if let last = messages.first {
            #expect(PortProcess.ports(of: last).count == 1 && last.replyPort != nil)
        }
    }

    @Test("S-PORT-2: the parent's send to a child's port with an inproc port as component or reply port fails with .componentNotTransferable and sends nothing")
    func inprocPortRefusedFromParentToChild() async throws {
        let name = PortProcess.uniqueName("npc")
        defer { PortProcess.removeNameFiles(name) }
        // While the child lives, the parent works on a thread of its own (see ParentSide).
        let parent = ParentSide("ipc-np-parent") {
            try PortIPCTests.refuseInprocPorts(to: try PortNameServer.lookup(name, timeout: .seconds(60)))
        }
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String] in
            await PortChild.run {
                let inbox = try IPCInbox("child-np")
                defer { inbox.close() }
                try PortNameServer.register(inbox.port, name: name)
                PortChild.check(await inbox.arrival(ofCount: 1, timeout: 60), "nothing arrived")
                let msgids = inbox.messages.map(\.msgid)
                // The parent sends its refused messages first: any that went
                // out would be ahead of message 100.
                PortChild.check(msgids == [100], "received \(msgids)")
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        for failure in try await parent.value() { Issue.record(Comment(rawValue: failure)) }
    }

    /// Every way of sending an inproc port to another process's port must
    /// fail at send time; then one message with ipc ports (msgid 100) is
    /// sent. Runs on a plain thread (sendRequest runs its run loop). Returns
    /// what went wrong.
    static func refuseInprocPorts(to remote: Port) throws -> [String] {
        let inproc = try Port(transport: .inproc)
        let ipc = try Port(transport: .ipc)
        defer {
            inproc.invalidate()
            ipc.invalidate()
        }
        let deadline = Date() + 10
        let attempts: [(String, () throws -> Void)] = [
            ("an inproc port component", {
                try remote.send(msgid: 1, components: [PortProcess.data("x"), .port(inproc)], before: deadline)
            }),
            ("an inproc reply port", {
                try remote.send(msgid: 2, components: [PortProcess.data("x")], replyPort: inproc, before: deadline)
            }),
            ("an inproc port after an ipc one", {
                try remote.send(msgid: 3, components: [.port(ipc), .port(inproc)], replyPort: ipc, before: deadline)
            }),
            ("PortMessage.send with an inproc component", {
                try PortMessage(msgid: 4, components: [.port(inproc)], sendPort: remote, replyPort: ipc).send(before: deadline)
            }),
            ("sendRequest with an inproc component", {
                _ = try remote.sendRequest(msgid: 5, components: [.port(inproc)], sendTimeout: 10, receiveTimeout: 10)
            }),
        ]
        var failures: [String] = []
        for (what, attempt) in attempts {
            let error = PortProcess.error(of: attempt)
            if PortProcess.caseName(error) != "componentNotTransferable" {
                failures.append("\(what): expected .componentNotTransferable, got \(String(describing: error))")
            } else if !"\(error!)".contains("inproc") {
                failures.append("\(what): the error does not say why: \(error!)")
            }
        }
        // The async request, on an executor of its own (no cooperative thread needed).
        let executor = try LoopThreadExecutor(name: "np-async")
        defer { executor.stop() }
        let asyncOutcome = executor.start { try await remote.request(msgid: 6, components: [.port(inproc)], timeout: .seconds(10)) }.wait()
        let asyncError: (any Error)? = switch asyncOutcome {
        case .failure(let error)?: error
        case .success?: nil
        case nil: TestFailure("the async request did not finish within 60 s")
        }
        if PortProcess.caseName(asyncError) != "componentNotTransferable" {
            failures.append("async request with an inproc component: expected .componentNotTransferable, got \(String(describing: asyncError))")
        }
        // ipc ports travel.
        try remote.send(msgid: 100, components: [.port(ipc)], replyPort: ipc, before: Date() + 10)
        return failures
    }
}
