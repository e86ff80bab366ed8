// The tap under overload: a sniffer that cannot keep up costs drops, counted
// and reported, never a blocked sender (S-TAP-2); the events' numbers show
// exactly what was dropped, to a stopped reader and to a slow one (S-TAP-1).
// Each runs in a child process (the tap is per process), with the helpers
// of PortTapTests.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing
import ZeroMQ

@Suite("Port traffic tap under overload (S-TAP-1, S-TAP-2)", .blocksThreads)
struct PortTapOverloadTests {
    @Test("S-TAP-2: a sniffer that cannot keep up costs drops, counted and reported, never a blocked sender (each send keeps a 2 s deadline); nothing is lost silently")
    func overloadShowsAsDrops() async throws {
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            await PortChild.run {
                // A sniffer that stops reading: its queue fills at once.
                let sniffer = try RawSniffer(receiveHighWaterMark: 10)
                PortTapTests.smallBatches()
                try PortTap.enable(endpoint: sniffer.endpoint)
                let (worker, port, delivered) = try PortTapTests.servedPort("tap-overload")
                let warmUps = try PortTapTests.warmUp(port, sniffer, delivered)
                let count = 20_000
                for index in 0..<count {
                    // A short deadline: a send the tap slowed down would throw.
                    try port.send(msgid: UInt32(index), components: [.data(Data(count: 32))], before: Date() + 2)
                }
                try PortTapTests.require(delivered.waitFor(count + warmUps))
                // Every event is either with the sniffer or counted as dropped.
                let total = 2 * (count + warmUps)
                var received = warmUps * 2
                let balanced = waitUntil(timeout: 60) {
                    received += sniffer.receive(total, timeout: 0.05).count
                    return received + Int(PortTap.droppedEventCount) == total
                }
                try PortTapTests.require(PortTap.droppedEventCount > 0, "the overload dropped nothing")
                try PortTapTests.require(balanced, "received \(received) + dropped \(PortTap.droppedEventCount) != \(total)")
                // The count reaches the sniffer: a later batch carries it.
                try port.send(msgid: 7, before: Date() + 2)
                _ = sniffer.receive(2, timeout: 30)
                try PortTapTests.require(sniffer.lastDropped == PortTap.droppedEventCount, "the drop count did not reach the sniffer")
                port.invalidate()
                worker.stop()
            }
        }
        ChildOutput(result).expectSuccess()
    }

    @Test("S-TAP-1: a tapped process numbers its events from 1, in the order they reach a sniffer, with its start time: under overload the gaps between the numbers received are exactly the events dropped")
    func eventsAreNumbered() async throws {
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            await PortChild.run {
                let sniffer = try RawSniffer(receiveHighWaterMark: 10)
                PortTapTests.smallBatches()
                try PortTap.enable(endpoint: sniffer.endpoint)
                let (worker, port, delivered) = try PortTapTests.servedPort("tap-numbered")
                let warmUps = try PortTapTests.warmUp(port, sniffer, delivered)
                // Everything before this point was received (and read) or dropped.
                let before = PortTap.producedEventCount
                let droppedBefore = PortTap.droppedEventCount
                try PortTapTests.require(before >= UInt64(2 * warmUps), "\(before) events numbered for \(warmUps) warm-up messages")
                let count = 20_000
                for index in 0..<count {
                    try port.send(msgid: UInt32(index), components: [.data(Data(count: 32))], before: Date() + 2)
                }
                try PortTapTests.require(delivered.waitFor(count + warmUps))
                var numbers: [UInt64] = []
                var starts: Set<UInt64> = []
                func take(waiting timeout: Double) -> Int {
                    let events = sniffer.receive(Int.max, timeout: timeout)
                    for event in events {
                        numbers.append(event.seq)
                        starts.insert(event.started)
                    }
                    return events.count
                }
                // The overload's backlog first, until the tap has nothing more to pass on...
                while take(waiting: 0.3) > 0 {}
                // ...then a last message, whose two events mark the end.
                try port.send(msgid: 7, before: Date() + 2)
                let last = before + UInt64(2 * count + 2)
                let complete = waitUntil(timeout: 60) {
                    _ = take(waiting: 0.05)
                    return numbers.last == last
                }
                try PortTapTests.require(complete, "the last event (\(last)) never came; last received \(String(describing: numbers.last))")
                try PortTapTests.require(PortTap.producedEventCount == last, "produced \(PortTap.producedEventCount), expected \(last)")
                try PortTapTests.require(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "the numbers did not rise one event after another")
                try PortTapTests.require(numbers.first! > before, "an event numbered \(numbers.first!) came after the warm-up's \(before)")
                // Gaps: every number after the warm-up not received.
                let gaps = (last - before) - UInt64(numbers.count)
                let dropped = PortTap.droppedEventCount - droppedBefore
                try PortTapTests.require(dropped > 0, "the overload dropped nothing")
                try PortTapTests.require(gaps == dropped, "\(gaps) numbers missing, \(dropped) events dropped")
                try PortTapTests.require(starts == [ProcessIdentity.current.startTime], "start times \(starts)")
                port.invalidate()
                worker.stop()
            }
        }
        ChildOutput(result).expectSuccess()
    }

    @Test("S-TAP-1: a slow reader (it pauses after each batch) gets what it can and counts the rest exactly: the gaps between the numbers it received are the events it missed, and received + missed = produced")
    func slowReaderAccountsExactly() async {
        await #expect(processExitsWith: .success) {
            let sniffer = try RawSniffer(receiveHighWaterMark: 4)
            PortTapTests.smallBatches()
            try PortTap.enable(endpoint: sniffer.endpoint)
            let (worker, port, delivered) = try PortTapTests.servedPort("tap-slow-reader")
            let warmUps = try PortTapTests.warmUp(port, sniffer, delivered)
            let before = PortTap.producedEventCount
            let count = 20_000
            DispatchQueue.global().async {
                for index in 0..<count { try? port.send(msgid: UInt32(index), components: [.data(Data(count: 16))], before: Date() + 5) }
            }
            // The reader's slowness is the point here, not a synchronisation:
            // 2 ms after every batch, while the sender floods.
            var numbers: [UInt64] = []
            let last = before + UInt64(2 * count)
            let complete = waitUntil(timeout: 120) {
                for event in sniffer.receive(1, timeout: 0.05) where event.seq > before { numbers.append(event.seq) }
                usleep(2_000)
                if numbers.last == last { return true }
                // Past the end of the traffic: the last events may have been missed; the counts say so.
                return delivered.waitFor(count + warmUps, timeout: 0) && PortTap.producedEventCount == last
                    && sniffer.receiveAll(timeout: 0.5).isEmpty
            }
            try PortTapTests.require(complete, "the traffic never ended")
            try PortTapTests.require(zip(numbers, numbers.dropFirst()).allSatisfy { $0 < $1 }, "the numbers did not rise")
            let missed = (last - before) - UInt64(numbers.count)
            try PortTapTests.require(missed > 0, "a reader 2 ms behind every batch missed nothing")
            try PortTapTests.require(numbers.count > 0, "the slow reader got nothing")
            try PortTapTests.require(UInt64(numbers.count) + missed == PortTap.producedEventCount - before)
            port.invalidate()
            worker.stop()
        }
    }
}
