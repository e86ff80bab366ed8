// Ports between processes: S-PORT-1 (any process of the user can send to an
// ipc port), S-PORT-2 (an inproc port cannot travel to another process),
// S-PORT-3 (a port component or reply port arrives as a usable send right to
// the original), S-PORT-4 (no loss, order, each once, send deadlines) and the
// flush of cross-process sends at exit.
//
// The other process is a Swift Testing exit test (see PortProcessSupport.swift):
// the test process registers a port under a name unique to the test in the
// default runtime directory, and the child looks it up (or the reverse).
import Dispatch
import Glibc
@testable import RunLoopKit
import Testing

@Suite("Ports across processes (S-PORT-1, S-PORT-2, S-PORT-3, S-PORT-4)")
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
        #expect(request.sendPort === server.port, "a received message's sendPort is the port it arrived on")
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
        #expect(viaBack.sendPort === back.port)

        // The child has exited: the send rights to its ports go invalid (S-PORT-5).
        #expect(await PortProcess.waitUntil(timeout: 10) { !component.isValid && !replyPort.isValid })
    }

    /// The child's side: looks the parent's port up, sends a request with a
    /// port component, checks the reply and what reached its own port.
    static func requestingChild(name: String, parentPID: Int32) async throws {
        PortChild.report("pid", getpid())
        let server = try PortNameServer.lookup(name, timeout: 30)
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
            PortChild.check(notice.sendPort === notices.port && notice.replyPort == nil, "notice \(notice)")
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
                let server = try PortNameServer.lookup(name, timeout: 30)
                for failure in try await PortIPCTests.sendInprocPorts(to: server) { PortChild.fail(failure) }
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

    @Test("S-PORT-2: the parent's send to a child's port with an inproc port as component or reply port fails with .componentNotTransferable and sends nothing",
          .disabled("OPEN (issue 3): the parent stalls about 30 s in this sequence of refused sends, so the child gives up; the child-to-parent direction passes. Root cause not found yet."))
    func inprocPortRefusedFromParentToChild() async throws {
        let name = PortProcess.uniqueName("npc")
        defer { PortProcess.removeNameFiles(name) }
        async let outcome = #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String] in
            await PortChild.run {
                let inbox = try IPCInbox("child-np")
                defer { inbox.close() }
                try PortNameServer.register(inbox.port, name: name)
                PortChild.check(inbox.wait(forCount: 1), "nothing arrived")
                let msgids = inbox.messages.map(\.msgid)
                // The parent sends its refused messages first: any that went
                // out would be ahead of message 100.
                PortChild.check(msgids == [100], "received \(msgids)")
            }
        }
        let remote = try await PortProcess.onThread { try PortNameServer.lookup(name, timeout: 30) }
        for failure in try await Self.sendInprocPorts(to: remote) { Issue.record(Comment(rawValue: failure)) }
        let child = ChildOutput(try #require(await outcome))
        child.expectSuccess()
    }

    /// Every way of sending an inproc port to another process's port must
    /// fail at send time; then one message with ipc ports (msgid 100) is sent.
    /// Returns what went wrong.
    static func sendInprocPorts(to remote: Port) async throws -> [String] {
        let inproc = try Port(transport: .inproc)
        let ipc = try Port(transport: .ipc)
        defer {
            inproc.invalidate()
            ipc.invalidate()
        }
        var failures: [String] = try await PortProcess.onThread("np-sender") {
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
            return failures
        }
        let asyncError = await PortProcess.error { _ = try await remote.request(msgid: 6, components: [.port(inproc)], timeout: 10) }
        if PortProcess.caseName(asyncError) != "componentNotTransferable" {
            failures.append("async request with an inproc component: expected .componentNotTransferable, got \(String(describing: asyncError))")
        }
        // ipc ports travel.
        try remote.send(msgid: 100, components: [.port(ipc)], replyPort: ipc, before: Date() + 10)
        return failures
    }

    // MARK: - S-PORT-4

    static let floodSenders = 2
    static let floodPerSender = 50_000

    @Test("S-PORT-4: 100,000 messages from two threads of a child to a parent's port arrive with no loss, in order per sender, each once")
    func hundredThousandMessagesInOrder() async throws {
        let name = PortProcess.uniqueName("flood")
        let checker = SequenceChecker(senders: Self.floodSenders)
        let server = try IPCInbox("ipc-flood", keepMessages: false) { message in
            let sequence = Int(message.msgid & 0xFF_FFFF)
            let carried = message.dataComponents.first.flatMap(PortProcess.sequenceValue)
            if carried != UInt64(sequence) || message.dataComponents.first?.count != 64 {
                checker.problem("msgid \(message.msgid) carries \(String(describing: message.dataComponents.first))")
            }
            checker.record(sender: Int(message.msgid >> 24), sequence: sequence)
        }
        try PortNameServer.register(server.port, name: name)
        defer {
            server.close()
            PortProcess.removeNameFiles(name)
        }
        let total = Self.floodSenders * Self.floodPerSender
        let started = PortProcess.now()

        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String] in
            await PortChild.run { try await PortIPCTests.floodingChild(name: name) }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        let arrived = await server.arrival(ofCount: total, timeout: 120)
        #expect(arrived, "\(server.count) of \(total) arrived; the port has input: \(server.port.receiver!.hasInput(on: server.port)). \(child)")
        let elapsed = PortProcess.now() - started
        #expect(checker.problems == [])
        #expect(checker.next == Array(repeating: Self.floodPerSender, count: Self.floodSenders))
        #expect(checker.total == total && server.count == total, "each message once")
        print("S-PORT-4: \(total) messages across processes in \(PortProcess.milliseconds(elapsed)) ms (child start to last delivery; the child's sends took \(child.reports["sendMs"] ?? "?") ms)")
    }

    static func floodingChild(name: String) async throws {
        let server = try PortNameServer.lookup(name, timeout: 30)
        let started = PortProcess.now()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for sender in 0..<floodSenders {
                group.addTask {
                    try await PortProcess.onThread("flood-\(sender)") {
                        for sequence in 0..<floodPerSender {
                            try server.send(
                                msgid: UInt32(sender) << 24 | UInt32(sequence),
                                components: [.data(PortProcess.sequenceData(UInt64(sequence), padding: 56))],
                                before: Date() + 30)
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
        PortChild.report("sendMs", PortProcess.milliseconds(PortProcess.now() - started))
    }

    @Test("S-PORT-4: a child's send to a parent's port whose queue is full waits until its deadline, then fails with .timedOut having sent nothing; the messages accepted before all arrive, in order, once",
          .disabled("OPEN (issue 3): over ipc, a port nobody has read since it was bound stops receiving after about 1,000 messages once reading starts; cause not found yet (a raw-libzmq reproduction is being worked on); the send timeout itself works."))
    func sendTimesOutWhenTheReceiverStalls() async throws {
        let stalledName = PortProcess.uniqueName("stall")
        let controlName = PortProcess.uniqueName("stallctl")
        // Not scheduled: nothing reads it until the child reports a timeout.
        let stalled = try Port(transport: .ipc)
        try PortNameServer.register(stalled, name: stalledName)
        let control = try IPCInbox("ipc-stall-ctl")
        try PortNameServer.register(control.port, name: controlName)
        let drain = LoopThread(name: "ipc-drain")
        try drain.start()
        defer {
            stalled.invalidate()
            control.close()
            drain.stop()
            PortProcess.removeNameFiles(stalledName)
            PortProcess.removeNameFiles(controlName)
        }
        let extra = 100

        async let outcome = #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [stalledName = stalledName as String, controlName = controlName as String, extra = extra as Int] in
            await PortChild.run {
                try await PortIPCTests.stallingChild(stalledName: stalledName, controlName: controlName, extra: extra)
            }
        }
        // The child says how many messages were accepted before a send timed out.
        let heard = await control.arrival(ofCount: 1, timeout: 60)
        let accepted = Int(control.messages.first?.msgid ?? 0)
        let checker = SequenceChecker(senders: 1)
        let counter = IPCCounter()
        stalled.setMessageHandler { message in
            checker.record(sender: 0, sequence: Int(message.msgid))
            counter.add()
        }
        try stalled.schedule(in: try #require(drain.runLoop), forMode: .default)

        let child = ChildOutput(try #require(await outcome))
        child.expectSuccess()
        try #require(heard, "the child never reported a timed-out send. \(child)")
        #expect(accepted > Int(SendChannel.highWaterMark), "a full queue holds more than the high-water mark")
        let arrived = await counter.arrival(atLeast: accepted + extra)
        #expect(arrived, "\(counter.current) of \(accepted + extra) arrived; the port has input: \(stalled.receiver!.hasInput(on: stalled)). \(child)")
        // The send that timed out sent nothing: its retry is the only copy of it.
        #expect(checker.problems == [])
        #expect(checker.next == [accepted + extra])
        #expect(checker.total == accepted + extra)
        print("S-PORT-4: a stalled receiver's queue took \(accepted) messages; the next send waited \(child.reports["waitedMs"] ?? "?") ms for a 200 ms deadline")
    }

    static func stallingChild(stalledName: String, controlName: String, extra: Int) async throws {
        let stalled = try PortNameServer.lookup(stalledName, timeout: 30)
        let control = try PortNameServer.lookup(controlName, timeout: 30)
        try await PortProcess.onThread("stall-sender") {
            var accepted = 0
            while true {
                let started = PortProcess.now()
                do {
                    try stalled.send(msgid: UInt32(accepted), components: [.data(PortProcess.sequenceData(UInt64(accepted)))],
                                     before: Date() + 0.2)
                    accepted += 1
                } catch {
                    let waited = PortProcess.now() - started
                    PortChild.check(PortProcess.caseName(error) == "timedOut", "send \(accepted) failed with \(error)")
                    // The deadline was 200 ms away: the send waited for room until then.
                    PortChild.check(waited >= 150_000_000 && waited < 5_000_000_000, "the timed-out send waited \(waited) ns")
                    PortChild.report("waitedMs", PortProcess.milliseconds(waited))
                    break
                }
                if accepted > 5_000_000 {
                    PortChild.fail("no send timed out after \(accepted) messages to a port nobody reads")
                    return
                }
            }
            PortChild.report("accepted", accepted)
            try control.send(msgid: UInt32(accepted), before: Date() + 10)
            // The parent starts reading now: the same message again, then more.
            for sequence in accepted..<(accepted + extra) {
                try stalled.send(msgid: UInt32(sequence), components: [.data(PortProcess.sequenceData(UInt64(sequence)))],
                                 before: Date() + 30)
            }
        }
    }

    // MARK: - Flush at exit

    enum ExitStyle: String, Codable, Sendable, CaseIterable {
        /// The exit test's body returns; the process exits normally.
        case returnFromBody
        /// `exit(0)` right after the last send.
        case exitCall
    }

    static let flushCount = 5_000

    @Test("S-PORT-4: a child that sends 5,000 messages and exits at once loses none of them (OutboundFlush)", arguments: ExitStyle.allCases)
    func sendsAreFlushedAtExit(style: ExitStyle) async throws {
        let name = PortProcess.uniqueName("flush")
        let checker = SequenceChecker(senders: 1)
        let server = try IPCInbox("ipc-flush", keepMessages: false) { message in
            if message.dataComponents.first.flatMap(PortProcess.sequenceValue) != UInt64(message.msgid) {
                checker.problem("msgid \(message.msgid) carries the wrong data")
            }
            checker.record(sender: 0, sequence: Int(message.msgid))
        }
        try PortNameServer.register(server.port, name: name)
        defer {
            server.close()
            PortProcess.removeNameFiles(name)
        }

        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String, style = style as ExitStyle] in
            await PortChild.run {
                let server = try PortNameServer.lookup(name, timeout: 30)
                for sequence in 0..<PortIPCTests.flushCount {
                    // 1 KiB each: at exit, hundreds are still queued in libzmq.
                    try server.send(msgid: UInt32(sequence), components: [.data(PortProcess.sequenceData(UInt64(sequence), padding: 1016))],
                                    before: Date() + 30)
                }
                PortChild.report("sent", PortIPCTests.flushCount)
                if style == .exitCall { exit(0) }
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess(finished: style == .returnFromBody)
        #expect(child.integer("sent") == Self.flushCount, child.comment)
        // The child has exited: whatever it sent is here or in flight in the kernel.
        let arrived = await server.arrival(ofCount: Self.flushCount)
        #expect(arrived, "\(server.count) of \(Self.flushCount) arrived; the port has input: \(server.port.receiver!.hasInput(on: server.port))")
        #expect(checker.problems == [])
        #expect(checker.next == [Self.flushCount] && checker.total == Self.flushCount)
    }
}
