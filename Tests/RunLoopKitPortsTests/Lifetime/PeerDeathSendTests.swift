// The death or close of a remote port's process while a send waits for room
// in its full queue (S-PORT-5, S-PORT-4): the send fails with .peerDied (or
// .invalidPort for a port closed by a live peer) well before its deadline,
// and the invalidation handlers run with no library lock held.
//
// The peer is PeerDeathTests' exit-test child: it registers a port under a
// name unique to the test and dies as told. While it lives, the parent works
// on a thread of its own (`ParentSide`): Swift Testing holds the cooperative
// threads while it awaits the child.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Peer death: a send waiting for room (S-PORT-5, S-PORT-4)", .blocksThreads)
struct PeerDeathSendTests {
    /// The orders the peer takes, and the check of a .peerDied, as in PeerDeathTests.
    typealias Order = PeerDeathTests.Order

    static func isPeerDied(_ error: PortError?, pid: Int32) -> Bool { PeerDeathTests.isPeerDied(error, pid: pid) }

    /// How long a send waiting for room may take to fail once the peer is
    /// told to die or close the port: it holds the peer's taking the order
    /// and acting on it, which under ThreadSanitizer beside the whole suite
    /// once took 7.7-9.8 s for a request (PeerDeathTests). 5 s, or 25 s
    /// under a sanitizer: still under the send's 30 s deadline.
    static let deathBound: Double = ProcessProbe.sanitizerName == nil ? 5 : 25

    // MARK: - A send waiting for room

    @Test("S-PORT-5, S-PORT-4: a send waiting for room in a full queue of a peer that dies fails with .peerDied, well before its 30 s deadline")
    func sendWaitingForRoomFailsWhenThePeerDies() async throws {
        let sinkName = PortProcess.uniqueName("sink")
        let controlName = PortProcess.uniqueName("sinkctl")
        defer {
            PortProcess.removeNameFiles(sinkName)
            PortProcess.removeNameFiles(controlName)
        }
        struct Observation: Sendable {
            var pid: Int32 = 0
            var filled = 0
            var fillError: String?
            var error: PortError?
            var seconds: Double = 0
        }
        let parent = ParentSide("sink-parent") { () throws -> Observation in
            let sink = try PortNameServer.lookup(sinkName, timeout: .seconds(60))
            let control = try PortNameServer.lookup(controlName, timeout: .seconds(60))
            var seen = Observation(pid: sink.ownerProcessID)
            // Fill the queue: nobody reads the sink. The first send may wait
            // for the connection (seconds on a loaded machine under a
            // sanitizer): only a later one that times out says the queue
            // is full.
            while true {
                do {
                    let room = seen.filled == 0 ? 30 : 0.2
                    try sink.send(msgid: 0, components: [.data(PortProcess.sequenceData(UInt64(seen.filled)))], before: Date() + room)
                    seen.filled += 1
                } catch let error as PortError {
                    if PortProcess.caseName(error) != "timedOut" { seen.fillError = "\(error)" }
                    break
                }
                if seen.filled > 5_000_000 {
                    seen.fillError = "no send timed out"
                    return seen
                }
            }
            // A send that waits for room, on a thread of its own...
            let waiting = ParentSide("sink-waiter") { () -> (PortError?, UInt64) in
                let started = PortProcess.now()
                do {
                    try sink.send(msgid: 1, before: Date() + 30)
                    return (nil, PortProcess.now() - started)
                } catch let error as PortError {
                    return (error, PortProcess.now() - started)
                }
            }
            // ...while the peer dies.
            try control.send(msgid: Order.die, before: Date() + 10)
            guard waiting.wait(timeout: 60) else { throw TestFailure("the waiting send never returned") }
            let (error, waited) = try ParentSideResult.take(waiting)
            seen.error = error
            seen.seconds = Double(waited) / 1e9
            return seen
        }
        let result = try await #require(processExitsWith: .signal(SIGKILL), observing: [\.standardErrorContent]) {
            [sinkName = sinkName as String, controlName = controlName as String] in
            await PortChild.run {
                // A port nobody reads, and a port on which the order to die comes.
                let sink = try Port(transport: .ipc)
                try PortNameServer.register(sink, name: sinkName)
                try await PeerDeathTests.peer(name: controlName, death: .kill)
                sink.invalidate()
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess(finished: false)
        let seen = try await parent.value()
        #expect(seen.fillError == nil)
        #expect(seen.filled > Int(SendChannel.highWaterMark))
        #expect(Self.isPeerDied(seen.error, pid: seen.pid), "the waiting send: \(String(describing: seen.error))")
        #expect(seen.seconds < Self.deathBound, "the waiting send failed after \(seen.seconds) s (deadline 30 s)")
        print("S-PORT-5: a send waiting for room at a dying peer failed after \(Int(seen.seconds * 1000)) ms")
    }

    // MARK: - Handlers run with no lock held

    /// How the port a send waits on ends.
    enum Ending: String, Codable, Sendable, CaseIterable {
        /// Its live peer invalidates it: the waiting send learns it.
        case closedByLivePeer
        /// Its peer is SIGKILLed mid-send: the waiting send or the process
        /// watcher learns it, whichever first.
        case peerKilled
    }

    @Test("S-PORT-5, no user code under a lock: a send waits for room at a port whose peer closes it (alive) or is SIGKILLed; the send fails (.invalidPort, .peerDied), and the invalidation handlers run with no library lock held: the send channel's lock is free, one handler sends to the same port (fails at once), one invalidates it, one resolves a new send right (registry and watcher locks)", arguments: Ending.allCases)
    func invalidationHandlersRunWithNoChannelLockHeld(ending: Ending) async throws {
        let sinkName = PortProcess.uniqueName("csink")
        let controlName = PortProcess.uniqueName("csinkctl")
        defer {
            PortProcess.removeNameFiles(sinkName)
            PortProcess.removeNameFiles(controlName)
        }
        struct Observation: Sendable {
            var filled = 0
            var error: PortError?
            var seconds: Double = 0
            var channelLockFreeInHandler: Bool?
            var handlerSend: String?
            var handlerSendSeconds: Double = 0
            var handlersRan = 0
        }
        let parent = ParentSide("csink-parent") { () throws -> Observation in
            let sink = try PortNameServer.lookup(sinkName, timeout: .seconds(60))
            let control = try PortNameServer.lookup(controlName, timeout: .seconds(60))
            var seen = Observation()
            // Fill the queue: the child never schedules the sink. The first
            // send may wait for the connection (as above).
            while true {
                do {
                    let room = seen.filled == 0 ? 30 : 0.2
                    try sink.send(msgid: 0, components: [.data(PortProcess.sequenceData(UInt64(seen.filled)))], before: Date() + room)
                    seen.filled += 1
                } catch {
                    break
                }
                if seen.filled > 5_000_000 { throw TestFailure("no send timed out") }
            }
            let inHandlers = Locked(Observation())
            // Each handler signals when done: they may run on another thread
            // (the process watcher's) than the waiting send's.
            let handlersDone = DispatchSemaphore(value: 0)
            // Run by the send or the watcher that learns of the end, on its thread.
            sink.addInvalidationHandler { port in
                let channelBits = port.channelBits.load(ordering: .acquiring)
                let channel = Unmanaged<SendChannel>.fromOpaque(UnsafeRawPointer(bitPattern: channelBits)!).takeUnretainedValue()
                // Not held by this thread: then it can be taken. (Another
                // thread, a send still waiting when the watcher runs these,
                // may hold it for a moment; this thread, if it held it,
                // would wait for itself until the timeout.)
                let free = channel.lock.lock(until: MonotonicClock.instant(secondsFromNow: 5))
                if free { channel.lock.unlock() }
                let started = PortProcess.now()
                var outcome = "sent"
                do {
                    try port.send(msgid: 2, before: Date() + 10)
                } catch let error as PortError {
                    outcome = PortProcess.caseName(error)
                } catch {
                    outcome = "\(error)"
                }
                let took = Double(PortProcess.now() - started) / 1e9
                inHandlers.withLock {
                    $0.channelLockFreeInHandler = free
                    $0.handlerSend = outcome
                    $0.handlerSendSeconds = took
                    $0.handlersRan += 1
                }
                handlersDone.signal()
            }
            sink.addInvalidationHandler { port in
                port.invalidate()  // already invalid: returns, and runs no handler twice
                inHandlers.withLock { $0.handlersRan += 1 }
                handlersDone.signal()
            }
            sink.addInvalidationHandler { _ in
                // The registry's and the process watcher's locks: a lookup
                // resolves a send right (a new one for a new descriptor).
                _ = try? PortNameServer.lookup(controlName)
                inHandlers.withLock { $0.handlersRan += 1 }
                handlersDone.signal()
            }
            // A send that waits for room, on a thread of its own...
            let waiting = ParentSide("csink-waiter") { () -> (PortError?, UInt64) in
                let started = PortProcess.now()
                do {
                    try sink.send(msgid: 1, before: Date() + 30)
                    return (nil, PortProcess.now() - started)
                } catch let error as PortError {
                    return (error, PortProcess.now() - started)
                }
            }
            // ...while the peer closes the port and lives on, or dies.
            try control.send(msgid: Order.closeSink, before: Date() + 10)
            guard waiting.wait(timeout: 60) else { throw TestFailure("the waiting send never returned") }
            let (error, waited) = try ParentSideResult.take(waiting)
            for _ in 0..<3 where handlersDone.wait(timeout: .now() + 30) == .timedOut { break }
            let handlers = inHandlers.value
            seen.error = error
            seen.seconds = Double(waited) / 1e9
            seen.channelLockFreeInHandler = handlers.channelLockFreeInHandler
            seen.handlerSend = handlers.handlerSend
            seen.handlerSendSeconds = handlers.handlerSendSeconds
            seen.handlersRan = handlers.handlersRan
            if ending == .closedByLivePeer { try control.send(msgid: Order.nothing, before: Date() + 10) }  // the child may go
            return seen
        }
        let condition: ExitTest.Condition = ending == .peerKilled ? .signal(SIGKILL) : .success
        let result = try await #require(processExitsWith: condition, observing: [\.standardErrorContent]) {
            [sinkName = sinkName as String, controlName = controlName as String, ending = ending as Ending] in
            await PortChild.run {
                let sink = try Port(transport: .ipc)  // never scheduled: it fills up
                try PortNameServer.register(sink, name: sinkName)
                let control = try IPCInbox("closer") { message in
                    guard message.msgid == Order.closeSink else { return }
                    switch ending {
                    case .closedByLivePeer: sink.invalidate()
                    case .peerKilled: kill(getpid(), SIGKILL)
                    }
                }
                try PortNameServer.register(control.port, name: controlName)
                _ = await control.arrival(ofCount: 2, timeout: 60)
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess(finished: ending == .closedByLivePeer)
        let seen = try await parent.value()
        let expected = ending == .closedByLivePeer ? "invalidPort" : "peerDied"
        #expect(seen.filled > Int(SendChannel.highWaterMark))
        #expect(PortProcess.caseName(seen.error) == expected, "the waiting send: \(String(describing: seen.error))")
        #expect(seen.seconds < Self.deathBound, "the waiting send failed after \(seen.seconds) s (deadline 30 s)")
        #expect(seen.handlersRan == 3, "handlers ran \(seen.handlersRan) times")
        #expect(seen.channelLockFreeInHandler == true, "the send channel's lock was held by the thread running the invalidation handlers")
        #expect(seen.handlerSend == expected, "a handler's send to the port: \(seen.handlerSend ?? "none")")
        #expect(seen.handlerSendSeconds < 5, "a handler's send took \(seen.handlerSendSeconds) s")
    }
}
