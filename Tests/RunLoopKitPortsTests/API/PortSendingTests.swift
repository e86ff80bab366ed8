// Ports within one process, S-PORT-4: a full queue makes a send wait until
// its deadline, and nothing is lost, duplicated or reordered.
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

@Suite("Ports in one process: sending (S-PORT-4)", .blocksThreads)
struct PortSendingTests {
    // MARK: - S-PORT-4

    enum Blocker: String, CaseIterable, Sendable {
        case notScheduled
        case loopBusy
    }

    @Test("S-PORT-4: when the queue is full a send waits until its deadline, then throws .timedOut; every accepted message arrives once, in order",
          arguments: Blocker.allCases)
    func fullQueueTimesOutAndLosesNothing(blocker: Blocker) throws {
        let (thread, loop) = try makePortLoopThread("p4-full")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let inbox = PortInbox()
        port.setMessageHandler(inbox.handler)
        let busy = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        if blocker == .loopBusy {
            try port.schedule(in: loop, forMode: .default)
            try thread.perform {
                busy.signal()
                _ = release.wait(timeout: .now() + 60)
            }
            #expect(busy.wait(timeout: .now() + 10) == .success)
        }

        let (accepted, failedAfter) = try fillUntilTimeout(port, wait: 0.05)
        #expect(accepted > 0)
        #expect(failedAfter >= 0.03, "the send failed after \(failedAfter) s without waiting for room")
        let start = MonotonicClock.now()
        #expect(portErrorThrown { try port.send(msgid: 0xDEAD, before: portDeadline(0.2)) }?.caseName == "timedOut")
        #expect(MonotonicClock.seconds(MonotonicClock.now() - start) >= 0.15)
        #expect(inbox.count == 0)

        // A send that waits with a long deadline goes through once there is room.
        let waiter = SpawnedThread { try port.send(msgid: 0xAAAA, before: portDeadline(60)) }
        if blocker == .loopBusy { release.signal() } else { try port.schedule(in: loop, forMode: .default) }
        try waiter.join()
        try port.send(msgid: 0xFFFF, before: portDeadline())
        #expect(inbox.waitForMsgid(0xFFFF))
        #expect(inbox.msgids == Array(0..<UInt32(accepted)) + [0xAAAA, 0xFFFF])
        #expect(port.droppedMessageCount == 0)
    }

    @Test("S-PORT-4: 4 threads × 50,000 messages into one port: each arrives exactly once, in order per sender")
    func manyProducersNoLossInOrder() throws {
        let producers = 4
        let perProducer = 50_000
        let total = producers * perProducer
        let (thread, loop) = try makePortLoopThread("p4-many")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        struct Tally {
            var next: [UInt32]
            var received = 0
            var problems: [String] = []
        }
        let tally = Locked(Tally(next: Array(repeating: 0, count: producers)))
        let done = DispatchSemaphore(value: 0)
        port.setMessageHandler { message in
            let producer = Int(message.msgid)
            let fields = message.dataComponents.first.map { data in
                data.withUnsafeBytes { ($0.loadUnaligned(fromByteOffset: 0, as: UInt32.self), $0.loadUnaligned(fromByteOffset: 4, as: UInt32.self)) }
            }
            let finished = tally.withLock { tally -> Bool in
                tally.received += 1
                if let (sender, sequence) = fields, producer < producers, sender == producer, message.dataComponents[0].count == 8 {
                    if sequence != tally.next[producer], tally.problems.count < 20 {
                        tally.problems.append("producer \(producer): \(sequence) arrived, \(tally.next[producer]) expected")
                    }
                    tally.next[producer] = sequence + 1
                } else if tally.problems.count < 20 {
                    tally.problems.append("malformed: \(message)")
                }
                return tally.received == total
            }
            if finished { done.signal() }
        }
        try port.schedule(in: loop, forMode: .default)

        let senders = (0..<producers).map { producer in
            SpawnedThread(named: "p4-producer-\(producer)") {
                var payload = Data(count: 8)
                for sequence in 0..<UInt32(perProducer) {
                    payload.withUnsafeMutableBytes { bytes in
                        bytes.storeBytes(of: UInt32(producer), toByteOffset: 0, as: UInt32.self)
                        bytes.storeBytes(of: sequence, toByteOffset: 4, as: UInt32.self)
                    }
                    try port.send(msgid: UInt32(producer), components: [.data(payload)], before: portDeadline(60))
                }
            }
        }
        for sender in senders { try sender.join(timeout: 300) }
        #expect(done.wait(timeout: .now() + 120) == .success)
        try thread.performAndWait {}  // anything after the last message would have been handled before this
        let result = tally.value
        #expect(result.received == total)
        #expect(result.next == Array(repeating: UInt32(perProducer), count: producers))
        #expect(result.problems.isEmpty, "\(result.problems)")
        #expect(port.droppedMessageCount == 0)
    }
}
