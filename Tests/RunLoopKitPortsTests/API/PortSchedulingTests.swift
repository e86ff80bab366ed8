// Ports within one process, S-PORT-1: a scheduled port delivers on its
// loop's thread, only in its modes, on one loop at a time; a send right
// cannot receive.
// The cross-process parts (ipc between processes, names, peer death) are in
// Transport/, Naming/ and Lifetime/; requests in PortRequestTests; the
// bytes on the wire in Wire/.
import Dispatch
import Glibc
import Synchronization
import Testing
import ZeroMQ
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport

@Suite("Ports in one process: scheduling and delivery (S-PORT-1)", .blocksThreads)
struct PortSchedulingTests {
    // MARK: - S-PORT-1

    @Test("S-PORT-1: a scheduled port delivers each message to its handler on its loop's thread; any thread can send",
          arguments: [RunLoop.Mode.default, .common])
    func deliversOnLoopThread(mode: RunLoop.Mode) throws {
        let fixture = try InboxPort("p1-deliver", mode: mode)
        defer { fixture.close() }
        let (thread, port, inbox) = (fixture.thread, fixture.port, fixture.inbox)

        try port.send(msgid: 1, before: portDeadline())  // the test's thread
        for sender: UInt32 in 2...4 {  // three threads of their own
            try onNewThread { try port.send(msgid: sender, before: portDeadline()) }
        }
        try thread.performAndWait { try port.send(msgid: 5, before: portDeadline()) }  // the receiving loop's thread
        #expect(inbox.waitForCount(5))
        #expect(Set(inbox.msgids) == [1, 2, 3, 4, 5])
        let loopThreadID = try #require(thread.threadID)
        #expect(inbox.all.allSatisfy { $0.threadID == loopThreadID }, "\(inbox.all.map(\.threadID)) vs \(loopThreadID)")
        #expect(inbox.all.allSatisfy { $0.mode == .default })
    }

    @Test("S-PORT-1, S-MODE-2: a port scheduled in two modes delivers only while its loop runs one of them; messages wait meanwhile and none is lost")
    func deliversOnlyInItsModes() throws {
        let (thread, loop) = try makePortLoopThread("p1-modes")
        defer { thread.stop() }
        let modeA = RunLoop.Mode("p1.mode-a")
        let modeB = RunLoop.Mode("p1.mode-b")
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let inbox = PortInbox()
        port.setMessageHandler(inbox.handler)
        try port.schedule(in: loop, forMode: modeA)
        try port.schedule(in: loop, forMode: modeB)

        /// On the loop's thread: runs `mode` until `count` messages in all arrived.
        func run(_ mode: RunLoop.Mode, until count: Int) throws {
            try thread.performAndWait {
                let deadline = MonotonicClock.instant(secondsFromNow: 10)
                while inbox.count < count && MonotonicClock.now() < deadline {
                    RunLoop.current.run(mode: mode, seconds: 1, returnAfterSourceHandled: true)
                }
            }
        }

        for msgid: UInt32 in 1...3 { try port.send(msgid: msgid, before: portDeadline()) }
        // The LoopThread runs its default mode: round trips through it give
        // it passes, and still nothing is delivered.
        for _ in 0..<5 { try thread.performAndWait {} }
        #expect(inbox.count == 0)
        try run(modeA, until: 3)
        #expect(inbox.msgids == [1, 2, 3])

        for msgid: UInt32 in 4...5 { try port.send(msgid: msgid, before: portDeadline()) }
        for _ in 0..<5 { try thread.performAndWait {} }
        #expect(inbox.count == 3)
        try run(modeB, until: 5)
        #expect(inbox.msgids == [1, 2, 3, 4, 5])
        #expect(inbox.all.map(\.mode) == [modeA, modeA, modeA, modeB, modeB])

        // Removed from mode B: mode B is empty again (S-RUN-1), the message waits for mode A.
        port.remove(from: loop, forMode: modeB)
        try port.send(msgid: 6, before: portDeadline())
        let resultInB = try thread.performAndWait { RunLoop.current.run(mode: modeB, seconds: 5) }
        #expect(resultInB == .finished)
        #expect(inbox.count == 5)
        try run(modeA, until: 6)
        #expect(inbox.msgids == [1, 2, 3, 4, 5, 6])
        let loopThreadID = try #require(thread.threadID)
        #expect(inbox.all.allSatisfy { $0.threadID == loopThreadID })
    }

    @Test("S-PORT-1: a port scheduled on one loop cannot be scheduled on another (.scheduledOnAnotherLoop); it keeps receiving on the first, in any of its modes, until removed from all of them")
    func secondLoopRefused() throws {
        let (first, firstLoop) = try makePortLoopThread("p1-first")
        defer { first.stop() }
        let (second, secondLoop) = try makePortLoopThread("p1-second")
        defer { second.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let inbox = PortInbox()
        port.setMessageHandler(inbox.handler)
        try port.schedule(in: firstLoop, forMode: .default)

        #expect(portErrorThrown { try port.schedule(in: secondLoop, forMode: .default) }?.caseName == "scheduledOnAnotherLoop")
        #expect(portErrorThrown { try port.schedule(in: secondLoop, forMode: "p1.other") }?.caseName == "scheduledOnAnotherLoop")
        try port.schedule(in: firstLoop, forMode: "p1.other")  // another mode of the same loop is fine

        try port.send(msgid: 9, before: portDeadline())
        #expect(inbox.waitForCount(1))
        #expect(inbox.all.map(\.threadID) == [try #require(first.threadID)])

        // Removed from every mode of the first loop, it may move to another
        // (NSPort removeFromRunLoop, then scheduleInRunLoop); what waits goes along.
        port.remove(from: firstLoop, forMode: .default)
        port.remove(from: firstLoop, forMode: "p1.other")
        try port.send(msgid: 10, before: portDeadline())
        try port.schedule(in: secondLoop, forMode: .default)
        #expect(inbox.waitForCount(2))
        #expect(inbox.msgids == [9, 10])
        #expect(inbox.all.map(\.threadID) == [try #require(first.threadID), try #require(second.threadID)])
        #expect(portErrorThrown { try port.schedule(in: firstLoop, forMode: .default) }?.caseName == "scheduledOnAnotherLoop")
    }

    @Test("S-PORT-1: two threads scheduling one port on two loops at the same moment: one succeeds, the other gets .scheduledOnAnotherLoop, nothing traps")
    func concurrentSchedulingOnTwoLoops() async throws {
        // In a child process: a trap must fail this test, not end the run.
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            await PortChild.run { try PortSchedulingTests.raceToSchedule(rounds: 3000) }
        }
        ChildOutput(result).expectSuccess()
    }

    /// The race itself, in the exit test's child: throws on a wrong
    /// outcome, which the child reports as a FAIL line.
    static func raceToSchedule(rounds: Int) throws {
        let loops = try [makePortLoopThread("p1-race-a"), makePortLoopThread("p1-race-b")]
        let current = Locked<Port?>(nil)
        let round = Atomic<Int>(0)
        let outcomes = Locked<[String]>([])
        let finished = DispatchSemaphore(value: 0)
        let racers = (0..<2).map { index in
            SpawnedThread {
                for number in 1...rounds {
                    while round.load(ordering: .acquiring) < number { sched_yield() }
                    let port = current.value!
                    let outcome = portErrorThrown { try port.schedule(in: loops[index].loop, forMode: .default) }
                    outcomes.withLock { $0.append(outcome.map { "\($0.caseName): \($0)" } ?? "scheduled") }
                    finished.signal()
                }
            }
        }
        for number in 1...rounds {
            current.value = try Port(transport: .inproc)
            round.store(number, ordering: .releasing)
            for _ in 0..<2 {
                guard finished.wait(timeout: .now() + 30) == .success else { throw TestFailure("round \(number) hung") }
            }
            let seen = outcomes.withLock { outcomes in
                defer { outcomes.removeAll() }
                return outcomes.sorted()
            }
            guard seen.count == 2, seen[0] == "scheduled", seen[1].hasPrefix("scheduledOnAnotherLoop:") else {
                throw TestFailure("round \(number): \(seen)")
            }
            current.value?.invalidate()
        }
        for racer in racers { try racer.join() }
        for (thread, _) in loops { thread.stop() }
    }

    @Test("S-PORT-1: a send right cannot be scheduled nor stream messages (.notLocal)")
    func sendRightCannotReceive() throws {
        let (thread, loop) = try makePortLoopThread("p1-sendright")
        defer { thread.stop() }
        // What a descriptor of another process's port resolves to.
        let remote = Port(sendRightTo: PortAddress(pid: 1, startTime: 1, portID: 1, ipcPath: "/nonexistent/p1-1.sock"))
        #expect(!remote.isLocal)
        #expect(remote.transport == .ipc)
        #expect(portErrorThrown { try remote.schedule(in: loop, forMode: .default) }?.caseName == "notLocal")
        #expect(portErrorThrown { _ = try remote.messages() }?.caseName == "notLocal")

        // What a descriptor of a port of this process that is gone resolves to.
        var local: Port? = try Port(transport: .inproc)
        let address = try #require(local).address
        local = nil
        let gone = Port.resolve(address)
        #expect(!gone.isLocal)
        #expect(!gone.isValid)
        #expect(portErrorThrown { try gone.schedule(in: loop, forMode: .default) }?.caseName == "notLocal")
    }
}
