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
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
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

    // MARK: - S-PORT-4

    static let floodSenders = 2
    static let floodPerSender = 50_000
    /// The msgid with which a child announces its acknowledgement port (the reply port).
    static let helloMsgid: UInt32 = 0xFFFF_FFFF

    @Test("S-PORT-4: 100,000 messages from two threads of a child to a parent's port arrive with no loss, in order per sender, each once")
    func hundredThousandMessagesInOrder() async throws {
        let name = PortProcess.uniqueName("flood")
        let total = Self.floodSenders * Self.floodPerSender
        let checker = SequenceChecker(senders: Self.floodSenders)
        let acknowledger = Acknowledger(expecting: total)
        let server = try IPCInbox("ipc-flood", keepMessages: false) { message in
            if message.msgid == Self.helloMsgid { return acknowledger.hello(message) }
            let sequence = Int(message.msgid & 0xFF_FFFF)
            let carried = message.dataComponents.first.flatMap(PortProcess.sequenceValue)
            if carried != UInt64(sequence) || message.dataComponents.first?.count != 64 {
                checker.problem("msgid \(message.msgid) carries \(String(describing: message.dataComponents.first))")
            }
            checker.record(sender: Int(message.msgid >> 24), sequence: sequence)
            acknowledger.received()
        }
        try PortNameServer.register(server.port, name: name)
        defer {
            server.close()
            PortProcess.removeNameFiles(name)
        }
        let started = PortProcess.now()

        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String] in
            await PortChild.run { try await PortIPCTests.floodingChild(name: name) }
        }
        let elapsed = PortProcess.now() - started
        let child = ChildOutput(result)
        child.expectSuccess()
        // The child exits only after the parent acknowledged every message.
        #expect(server.count == total + 1, "\(server.count - 1) of \(total) arrived. \(child)")
        #expect(checker.problems == [])
        #expect(checker.next == Array(repeating: Self.floodPerSender, count: Self.floodSenders))
        #expect(checker.total == total, "each message once")
        #expect(acknowledger.problems == [])
        print("S-PORT-4: \(total) messages across processes in \(Int(PortProcess.milliseconds(elapsed))) ms from the child's start to its exit (its sends took \(child.reports["sendMs"] ?? "?") ms)")
    }

    static func floodingChild(name: String) async throws {
        let server = try PortNameServer.lookup(name, timeout: .seconds(60))
        let acknowledgements = try IPCInbox("child-ack")
        defer { acknowledgements.close() }
        try server.send(msgid: helloMsgid, replyPort: acknowledgements.port, before: Date() + 30)
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
        PortChild.report("sendMs", Int(PortProcess.milliseconds(PortProcess.now() - started)))
        PortChild.check(await acknowledgements.arrival(ofCount: 1, timeout: 120), "the parent never acknowledged all messages")
    }

    @Test("S-PORT-4: a child's send to a parent's port whose queue is full waits until its deadline, then fails with .timedOut having sent nothing; the messages accepted before all arrive, in order, once")
    func sendTimesOutWhenTheReceiverStalls() async throws {
        let stalledName = PortProcess.uniqueName("stall")
        let controlName = PortProcess.uniqueName("stallctl")
        let extra = 100
        // Not scheduled until the child reports a timed-out send: its queue fills.
        let stalled = try Port(transport: .ipc)
        try PortNameServer.register(stalled, name: stalledName)
        let drain = LoopThread(name: "ipc-drain")
        try drain.start()
        let drainLoop = try #require(drain.runLoop)
        let checker = SequenceChecker(senders: 1)
        let acknowledger = Acknowledger(expecting: 0)
        stalled.setMessageHandler { message in
            checker.record(sender: 0, sequence: Int(message.msgid))
            acknowledger.received()
        }
        let scheduleError = Locked<String?>(nil)
        // The child's report ("n messages accepted", with its acknowledgement
        // port) arrives on the control port's loop thread, which then starts
        // the reading: no Swift concurrency thread is free while the child runs.
        let control = try IPCInbox("ipc-stall-ctl") { message in
            acknowledger.expect(Int(message.msgid) + extra)
            acknowledger.hello(message)
            do { try stalled.schedule(in: drainLoop, forMode: .default) } catch { scheduleError.value = "\(error)" }
        }
        try PortNameServer.register(control.port, name: controlName)
        defer {
            stalled.invalidate()
            control.close()
            drain.stop()
            PortProcess.removeNameFiles(stalledName)
            PortProcess.removeNameFiles(controlName)
        }

        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [stalledName = stalledName as String, controlName = controlName as String, extra = extra as Int] in
            await PortChild.run {
                try await PortIPCTests.stallingChild(stalledName: stalledName, controlName: controlName, extra: extra)
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        #expect(scheduleError.value == nil)
        let accepted = try #require(child.integer("accepted"), "the child never reported a timed-out send. \(child)")
        #expect(control.messages.first?.msgid == UInt32(accepted))
        #expect(accepted > Int(SendChannel.highWaterMark), "a full queue holds more than the high-water mark")
        // The send that timed out sent nothing: its retry is the only copy of it.
        #expect(checker.problems == [])
        #expect(checker.next == [accepted + extra], "\(checker.total) of \(accepted + extra) arrived. \(child)")
        #expect(checker.total == accepted + extra)
        #expect(acknowledger.problems == [])
        print("S-PORT-4: a stalled receiver's queue took \(accepted) messages; the next send waited \(child.reports["waitedMs"] ?? "?") ms for a 200 ms deadline")
    }

    static func stallingChild(stalledName: String, controlName: String, extra: Int) async throws {
        let stalled = try PortNameServer.lookup(stalledName, timeout: .seconds(60))
        let control = try PortNameServer.lookup(controlName, timeout: .seconds(60))
        let acknowledgements = try IPCInbox("child-ack")
        defer { acknowledgements.close() }
        try await PortProcess.onThread("stall-sender") {
            var accepted = 0
            while true {
                let started = PortProcess.now()
                do {
                    // The first send may wait for the connection (seconds
                    // on a loaded machine under a sanitizer).
                    try stalled.send(msgid: UInt32(accepted), components: [.data(PortProcess.sequenceData(UInt64(accepted)))],
                                     before: Date() + (accepted == 0 ? 30 : 0.2))
                    accepted += 1
                } catch {
                    let waited = PortProcess.now() - started
                    PortChild.check(PortProcess.caseName(error) == "timedOut", "send \(accepted) failed with \(error)")
                    // The deadline was 200 ms away: the send waited for room until then.
                    PortChild.check(waited >= 150_000_000 && waited < 10_000_000_000, "the timed-out send waited \(waited) ns")
                    PortChild.report("waitedMs", Int(PortProcess.milliseconds(waited)))
                    break
                }
                if accepted > 5_000_000 {
                    PortChild.fail("no send timed out after \(accepted) messages to a port nobody reads")
                    return
                }
            }
            PortChild.report("accepted", accepted)
            try control.send(msgid: UInt32(accepted), replyPort: acknowledgements.port, before: Date() + 10)
            // The parent starts reading now: the same message again, then more.
            for sequence in accepted..<(accepted + extra) {
                try stalled.send(msgid: UInt32(sequence), components: [.data(PortProcess.sequenceData(UInt64(sequence)))],
                                 before: Date() + 30)
            }
        }
        PortChild.check(await acknowledgements.arrival(ofCount: 1, timeout: 120), "the parent never acknowledged all messages")
    }

    // MARK: - Flush at exit

    enum ExitStyle: String, Codable, Sendable, CaseIterable {
        /// The exit test's body returns; the process exits normally.
        case returnFromBody
        /// `exit(0)` right after the last send.
        case exitCall
        /// The body returns while the receiver, slower than the sender, is
        /// still a full queue behind.
        case receiverBehind
    }

    static let flushCount = 20_000

    @Test("S-PORT-4: a child that sends 20,000 messages and exits at once loses none of them (OutboundFlush)", arguments: ExitStyle.allCases)
    func sendsAreFlushedAtExit(style: ExitStyle) async throws {
        let name = PortProcess.uniqueName("flush")
        let checker = SequenceChecker(senders: 1)
        let server = try IPCInbox("ipc-flush", keepMessages: false) { message in
            if message.dataComponents.first.flatMap(PortProcess.sequenceValue) != UInt64(message.msgid) {
                checker.problem("msgid \(message.msgid) carries the wrong data")
            }
            // The input of the receiverBehind case: a receiver slower than its
            // sender (100 µs a message), so that its queue is full when the sender exits.
            if style == .receiverBehind { PortProcess.pause(microseconds: 100) }
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
                // The subject is the flush to a peer that reads, not the
                // exit bound (ExitBoundTests): a bound that a sanitized,
                // loaded machine cannot run out of.
                Port.exitBound = .seconds(120)
                let server = try PortNameServer.lookup(name, timeout: .seconds(60))
                for sequence in 0..<PortIPCTests.flushCount {
                    // Small messages: at exit, thousands are still queued.
                    try server.send(msgid: UInt32(sequence), components: [.data(PortProcess.sequenceData(UInt64(sequence)))],
                                    before: Date() + 30)
                }
                PortChild.report("sent", PortIPCTests.flushCount)
                if style == .exitCall { exit(0) }
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess(finished: style != .exitCall)
        #expect(child.integer("sent") == Self.flushCount, child.comment)
        // The child has exited: whatever it sent is here or in flight, and
        // keeps arriving until it is all here.
        let arrived = await server.arrivalWhileProgressing(ofCount: Self.flushCount)
        #expect(arrived, "\(server.count) of \(Self.flushCount) arrived")
        #expect(checker.problems == [])
        #expect(checker.next == [Self.flushCount] && checker.total == Self.flushCount)
    }
}

/// The parent's side of "tell me when you have everything": the child sends
/// a message whose reply port is its acknowledgement port, and once the
/// expected number of messages has arrived the parent sends an empty message
/// there, from the receiving loop thread. A child that waits for it never
/// exits with messages in flight (see `sendsAreFlushedAtExit` for that case).
final class Acknowledger: Sendable {
    private struct State {
        var expected: Int
        var received = 0
        var replyPort: Port?
        var acknowledged = false
        var problems: [String] = []
    }

    private let state: Locked<State>

    init(expecting count: Int) { state = Locked(State(expected: count)) }

    func expect(_ count: Int) { state.withLock { $0.expected = count } }

    func hello(_ message: PortMessage) {
        state.withLock { $0.replyPort = message.replyPort }
        acknowledgeIfDone()
    }

    func received() {
        state.withLock { $0.received += 1 }
        acknowledgeIfDone()
    }

    var problems: [String] { state.withLock { $0.problems } }

    private func acknowledgeIfDone() {
        let port: Port? = state.withLock { state in
            guard !state.acknowledged, state.expected > 0, state.received >= state.expected, let port = state.replyPort else { return nil }
            state.acknowledged = true
            return port
        }
        guard let port else { return }
        do {
            try port.send(msgid: 1, before: Date() + 10)
        } catch {
            state.withLock { $0.problems.append("acknowledging failed: \(error)") }
        }
    }
}
