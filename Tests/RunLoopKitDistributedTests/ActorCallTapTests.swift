// What the port tap, and so portsniff, shows of distributed actor calls
// (docs/tap-format.md, "Actor calls"): each call, its reply and a
// cancellation as events that name the method, the call's id and the
// actor, the reply with its outcome. In a child process each: the tap is
// per process.
import Foundation
import Glibc
import RunLoopKit
import RunLoopKitDistributed
@_spi(RunLoopKitInternals) import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Distributed actor calls in the port tap (issue 43)", .blocksThreads)
struct ActorCallTapTests {
    @Test("S-TAP-1: a call, its reply and a cancellation are tap events naming the method, the call and the actor, at both ends: the call's delivery before its reply's send, a reply with its outcome (value, remoteError), a cancelled call's cancellation")
    func callsAndRepliesNameTheirMethod() async {
        await #expect(processExitsWith: .success) {
            let directory = makeTemporaryDirectory("rlk-actor-tap")
            let reader = try PortTapReader(endpoint: "ipc://\(directory)/tap.sock")
            try PortTap.enable(endpoint: reader.endpoint)
            // The tap sends nothing until its socket has connected: probes
            // until one comes through.
            let probe = try Port(transport: .inproc)
            var connected = false
            for _ in 0..<200 where !connected {
                try probe.send(msgid: 0xFFFF_FFFF, before: Date() + 2)
                connected = try reader.receive(timeout: 0.1) != nil
            }
            ActorCallTapTests.require(connected, 9, "the tap never connected")
            let systems = try TwoSystems()
            let actor = systems.depot.id.number
            ActorCallTapTests.require(try await systems.remote.add(2, 3) == 5, 10)
            do {
                _ = try await systems.remote.weigh(Parcel(label: "fire", weights: [], returnTo: systems.home.callPort, copies: [:]))
                exit(11)
            } catch {}
            let waiting = Task { try await systems.remote.wait() }
            while systems.log.started.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(2)) }
            waiting.cancel()
            _ = await waiting.result
            while systems.log.cancelled.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(2)) }

            // Every event of those calls: 4 each for the first two, and for
            // the cancelled one its call (2), its cancellation (2), the
            // callee's reply (sent; delivered but no longer awaited).
            var events: [PortTapEvent] = []
            let deadline = Date() + 60
            while events.filter({ $0.actorCall != nil }).count < 14, Date() < deadline {
                if let batch = try reader.receive(timeout: 1) { events += batch.events }
            }
            // In the order they happened: a send is numbered once it is
            // queued, so its delivery on another thread may be numbered first.
            let calls = events.filter { $0.actorCall != nil }.sorted { $0.monotonicTime < $1.monotonicTime }
            func four(_ method: String) -> [PortTapEvent] { calls.filter { $0.actorCall?.method == method } }

            let add = four("Depot.add(_:_:)")
            ActorCallTapTests.require(add.map(\.kind) == [.send, .deliver, .send, .deliver], 20, "\(add)")
            ActorCallTapTests.require(add.allSatisfy { $0.actorCall?.actor == actor && $0.actorCall?.id == add[0].actorCall?.id }, 21, "\(add)")
            ActorCallTapTests.require(add[0].actorCall?.role == .call && add[1].actorCall?.role == .call, 22, "\(add)")
            ActorCallTapTests.require(add[2].actorCall?.role == .reply && add[2].actorCall?.outcome == .value && add[3].actorCall == add[2].actorCall, 23, "\(add)")
            // The send and its delivery pair by trace id; the callee's
            // delivery is recorded before its reply is sent.
            ActorCallTapTests.require(add[0].trace != nil && add[0].trace == add[1].trace && add[2].trace == add[3].trace, 24, "\(add)")
            ActorCallTapTests.require(add[1].monotonicTime < add[2].monotonicTime && add[1].thread == "actors-home" && add[3].thread == "actors-away", 25, "\(add)")

            let weigh = four("Depot.weigh(_:)")
            ActorCallTapTests.require(weigh.count == 4 && weigh[3].actorCall?.outcome == .remoteError, 30, "\(weigh)")

            let wait = four("Depot.wait()")
            let roles = wait.map { "\($0.kind.rawValue) \($0.actorCall!.role.rawValue)" }
            ActorCallTapTests.require(roles.starts(with: ["send call", "deliver call", "send cancellation", "deliver cancellation"]), 40, "\(roles)")
            ActorCallTapTests.require(wait.contains { $0.kind == .send && $0.actorCall?.role == .reply && $0.actorCall?.outcome == .remoteError }, 41, "\(roles)")
            systems.close()
            reader.close()
        }
    }

    /// Exits the child with `status` when `condition` is false, saying why.
    static func require(_ condition: Bool, _ status: Int32, _ detail: @autoclosure () -> String = "") {
        guard !condition else { return }
        FileHandle.standardError.write(Data("check \(status) failed: \(detail())\n".utf8))
        exit(status)
    }
}
