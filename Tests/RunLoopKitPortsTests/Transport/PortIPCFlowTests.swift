// Ports between processes, S-PORT-4: no loss, order, each message once, and
// send deadlines against a stalled receiver; and the flush of cross-process
// sends at exit (OutboundFlush).
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

@Suite("Ports across processes: flow (S-PORT-4)", .blocksThreads)
struct PortIPCFlowTests {
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
            await PortChild.run { try await PortIPCFlowTests.floodingChild(name: name) }
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
                try await PortIPCFlowTests.stallingChild(stalledName: stalledName, controlName: controlName, extra: extra)
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
                for sequence in 0..<PortIPCFlowTests.flushCount {
                    // Small messages: at exit, thousands are still queued.
                    try server.send(msgid: UInt32(sequence), components: [.data(PortProcess.sequenceData(UInt64(sequence)))],
                                    before: Date() + 30)
                }
                PortChild.report("sent", PortIPCFlowTests.flushCount)
                if style == .exitCall { exit(0) }
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess(finished: style != .exitCall)
        #expect(child.integer("sent") == Self.flushCount, child.comment)
        // The child has exited: whatever it sent is here or in flight, and
        // keeps arriving until it is all here. Waited for in full (120 s at
        // most, a safety net), not as long as it keeps coming: a receiver
        // 100 µs a message behind, on a loaded machine under a sanitizer,
        // may be held back for seconds (2.1 s once) without taking one.
        let arrived = await server.arrival(ofCount: Self.flushCount, timeout: 120)
        #expect(arrived, "\(server.count) of \(Self.flushCount) arrived")
        #expect(checker.problems == [])
        #expect(checker.next == [Self.flushCount] && checker.total == Self.flushCount)
    }
}
