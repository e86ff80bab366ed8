// Distributed actors between hosts (issue 43; S-NET-1, S-NET-3, S-NET-4):
// two hosts made of network namespaces joined through a bridge
// (NetworkHosts, as the ports' network tests make them), an
// `rlk-actor-peer` (Tests/ActorPeer) in each with its own pid and mount
// namespaces and its own key: host B's serves a `Scale` from a tcp
// PortActorSystem under a name, host A's finds it by name at B's endpoint
// and calls it. Where namespaces cannot be made (not root), the same runs
// over loopback, and says so; with RUNLOOPKIT_REQUIRE_NETNS=1 (CI) it
// fails instead. Everything (namespaces, processes, the fifo) is removed
// in `defer`s, also on failure.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) import RunLoopKitCore
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Distributed actors between hosts made of network namespaces (issue 43; S-NET-1, S-NET-3, S-NET-4)", .serialized, .blocksThreads)
struct PortActorSystemHostsTests {
    /// What a run of the two hosts' programs printed, read by the test.
    struct Run: Sendable {
        var caller = ""
        var callerStatus: Int32?
        /// Each generation of host B's program.
        var served: [String] = []
        /// From the moment host B's program was killed (or its link taken
        /// down) to the moment the call in flight failed on host A.
        var toFailure: Duration?
        var note = ""
    }

    /// A line's text after `prefix`, from a program's output.
    static func line(_ output: String, _ prefix: String) -> String? {
        output.split(separator: "\n").first { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    static func lines(_ output: String, _ prefix: String) -> [String] {
        output.split(separator: "\n").filter { $0.hasPrefix(prefix) }.map { String($0.dropFirst(prefix.count)) }
    }

    /// The tcp port host B's program listens on: fixed, so that a restart
    /// is at the same address (the hosts' network is fresh; on loopback,
    /// apart from TCPHostsTests' 7400 to 7899).
    static var servedPort: UInt16 { 7900 + UInt16(getpid() % 500) }

    /// Host B's program, generation `generation`, serving under `name`;
    /// returns once it printed READY.
    static func serve(_ hosts: NetworkHosts, name: String, generation: Int) throws -> NetworkPeerProcess {
        let peer = try NetworkPeerProcess.start(
            ["serve", hosts.address(1), "\(servedPort)", name, "\(generation)"], child: 1, program: "rlk-actor-peer",
            launcher: hosts.launcher(1))
        guard peer.waitForLine(starting: "READY") != nil else {
            peer.program.killAndReap()
            throw TestFailure("rlk-actor-peer serve did not start: \(peer.program.output) \(peer.program.errorOutput)")
        }
        return peer
    }

    /// Host A's program, calling the actor `name` of `served`'s process.
    static func call(
        _ hosts: NetworkHosts, _ served: NetworkPeerProcess, name: String, go: String, environment: [String: String] = [:]
    ) throws -> NetworkPeerProcess {
        let endpoint = "tcp://\(hosts.address(1)):\(servedPort)"
        let key = NetworkKeysFixture.shared.publicKeyText(child: 1)
        return try NetworkPeerProcess.start(
            ["call", hosts.address(0), endpoint, key, name, served.line(starting: "CALLPORT ") ?? "", served.line(starting: "ACTOR ") ?? "", go],
            child: 0, program: "rlk-actor-peer", launcher: hosts.launcher(0), environment: environment)
    }

    /// Two hosts; host B's program serving under `name`, host A's calling
    /// it; once A's call to `hang` is in flight on B, `end` ends B's process
    /// or cuts B off (and A's call fails). With `restart`, B's program is
    /// then started again under the same name, and A told so (a fifo), to
    /// find it again. Runs on a LoopThread of its own, not on the 2-thread
    /// cooperative pool that other suites' exit tests hold at times;
    /// everything is removed before it returns, also on failure, and the
    /// test checks what it returns.
    static func callInFlight(
        name: String, restart: Bool, callerEnvironment: [String: String] = [:],
        end: @escaping @Sendable (NetworkHosts, NetworkPeerProcess) throws -> Void
    ) async throws -> Run {
        let thread = LoopThread(name: "hosts-driver")
        try thread.start()
        defer { thread.stop() }
        return try await Task(executorPreference: thread) {
            var run = Run()
            let hosts = try NetworkHosts(count: 2)
            defer { hosts.remove() }
            let go: Fifo? = try restart ? Fifo() : nil
            defer { go?.remove() }
            let first = try Self.serve(hosts, name: name, generation: 1)
            defer { first.program.killAndReap() }
            let caller = try Self.call(hosts, first, name: name, go: go?.path ?? "-", environment: callerEnvironment)
            defer { caller.program.killAndReap() }
            var second: NetworkPeerProcess?
            defer { second?.stop() }
            let note: String = {
                guard caller.waitForLine(starting: "IN-FLIGHT") != nil, first.waitForLine(starting: "HANGING") != nil else {
                    return "the call never got in flight"
                }
                let ended = MonotonicClock.now()
                do { try end(hosts, first) } catch { return "\(error)" }
                guard caller.waitForLine(starting: "OLD-AFTER-DEATH ") != nil,
                      let failedAt = caller.line(starting: "HANG-FAILED ")?.split(separator: " ").first.flatMap({ UInt64($0) })
                else { return "the call in flight did not end" }
                run.toFailure = .nanoseconds(Int64(failedAt) - Int64(ended))
                if let go {
                    do { second = try Self.serve(hosts, name: name, generation: 2) } catch { return "\(error)" }
                    go.signal()
                }
                run.callerStatus = caller.program.waitForExit(timeout: 90)
                return ""
            }()
            run.note = note
            run.caller = caller.program.output + caller.program.errorOutput
            run.served = [first.program.output] + (second.map { [$0.program.output] } ?? [])
            return run
        }.value
    }

    /// Checks what host A's caller saw before the call in flight: found by
    /// name across hosts, called with Codable values and ports, the ID made
    /// of the call port's address the same actor.
    static func expectCalls(_ run: Run, sourceLocation: SourceLocation = #_sourceLocation) {
        let caller = run.caller
        #expect(line(caller, "ERROR ") == nil, "\(caller)", sourceLocation: sourceLocation)
        #expect(line(caller, "FOUND ") == "1", "\(caller)", sourceLocation: sourceLocation)
        #expect(line(caller, "REMOTE ") == "true", sourceLocation: sourceLocation)
        #expect(line(caller, "THREAD ") == "scale-worker", "the call ran on the actor's pinned LoopThread", sourceLocation: sourceLocation)
        #expect(line(caller, "ECHO ") == "true", "a generic function's value came back", sourceLocation: sourceLocation)
        #expect(line(caller, "BY-ADDRESS ") == "1 same-id=true", "an ID made of the call port's address", sourceLocation: sourceLocation)
        #expect(line(caller, "WEIGHED ") == "crate (weighed by generation 1, own port: true) weights=[1.5, 2.25]",
                "host B got its own call port back as its own port", sourceLocation: sourceLocation)
        #expect(line(caller, "SAME-PORT ") == "true", "host A's port came back as the same object", sourceLocation: sourceLocation)
        #expect(line(caller, "YOURS-BACK ") == "true", sourceLocation: sourceLocation)
        #expect(line(caller, "RETURNED ") == "via generation 1", "host B sent to the port it got in the parcel", sourceLocation: sourceLocation)
        #expect(line(caller, "ADD ") == "42", sourceLocation: sourceLocation)
    }

    @Test("S-NET-1, S-NET-4, S-NET-3: host A finds host B's actor by name at B's endpoint and calls it with Codable values and ports (and by an ID made of its call port's address); B's process SIGKILLed with a call in flight fails it with .transport(connectionLost) at once; restarted under the same name, it is found again, and the old reference fails without reaching it")
    func calledFoundKilledAndFoundAgain() async throws {
        let run = try await Self.callInFlight(name: "scale", restart: true) { _, served in served.program.killAndReap() }
        #expect(run.note.isEmpty, "\(run.note)")
        Self.expectCalls(run)
        let caller = run.caller
        #expect(run.callerStatus == 0, "\(caller)")
        #expect(Self.line(caller, "HANG-FAILED ")?.split(separator: " ").dropFirst().first == "transport", "\(caller)")
        #expect(Self.line(caller, "HANG-FAILED ")?.contains("transport connectionLost") == true, "\(caller)")
        // At once: its host's kernel closed the connection. Well within the
        // heartbeat bound (the caller's is the default, 12.5 s), with slack
        // for a loaded machine under ThreadSanitizer.
        if let elapsed = run.toFailure {
            #expect(elapsed < .seconds(5), "\(elapsed)")
        }
        #expect(Self.line(caller, "OLD-AFTER-DEATH ")?.hasPrefix("transport ") == true, "\(caller)")
        #expect(Self.line(caller, "FOUND-AGAIN ") == "2 new-system=true", "\(caller)")
        #expect(Self.line(caller, "ADD-AGAIN ") == "5", "\(caller)")
        #expect(Self.line(caller, "OLD-AFTER-RESTART ")?.hasPrefix("transport ") == true, "\(caller)")
        #expect(Self.line(caller, "OLD-BY-ADDRESS-AFTER-RESTART ")?.hasPrefix("transport ") == true, "\(caller)")
        #expect(Self.line(caller, "DONE") != nil, "\(caller)")
        // The first generation served every call up to the one in flight;
        // the second only the new reference's: nothing through the old one.
        #expect(run.served.count == 2)
        #expect(run.served.first.map { Self.lines($0, "CALL ") }
                == ["whichGeneration", "threadName", "echo", "whichGeneration", "weigh", "add", "hang"], "\(run.served)")
        #expect(run.served.dropFirst().first.map { Self.lines($0, "CALL ") } == ["whichGeneration", "add"], "\(run.served)")
    }

    @Test("S-NET-3: host B's link taken down with a call in flight (both processes live on): host A's call fails with .transport(connectionLost) by heartbeats, within their bound (1.25 times A's heartbeat timeout)")
    func hostGoneMidCall() async throws {
        let run = try await Self.callInFlight(name: "scale", restart: false, callerEnvironment: NetworkPeerProcess.shortHeartbeats) { hosts, served in
            if let namespaces = hosts.namespaces {
                try namespaces.setLink(1, up: false)
            } else {
                kill(served.program.pid, SIGSTOP)  // over loopback: the peer goes silent, its connection stays
            }
        }
        #expect(run.note.isEmpty, "\(run.note)")
        Self.expectCalls(run)
        let caller = run.caller
        #expect(run.callerStatus == 0, "\(caller)")
        let failure = Self.line(caller, "HANG-FAILED ") ?? ""
        #expect(failure.contains("transport connectionLost") && failure.contains("heartbeats"), "\(caller)")
        // The bound (1.25 × the heartbeat timeout the caller was given),
        // and slack for a loaded machine under ThreadSanitizer; the
        // connection stays open, so only heartbeats can tell.
        let bound = Duration.nanoseconds(Int64(NetworkPeerProcess.shortHeartbeatTimeoutNanoseconds * 5 / 4)) + .seconds(3)
        #expect(run.toFailure.map { $0 < bound && $0 > .zero } == true, "\(String(describing: run.toFailure))")
        #expect(Self.line(caller, "OLD-AFTER-DEATH ")?.hasPrefix("transport ") == true, "\(caller)")
    }
}

/// A fifo a test writes a line to when the program reading it may go on.
/// The test holds it open for reading and writing, so that neither side's
/// open blocks, and the program's read waits for the line.
final class Fifo: Sendable {
    let path: String
    private let fd: Int32

    init() throws {
        path = NetworkKeysFixture.shared.directory + "/go-\(UInt32.random(in: 0...UInt32.max))"
        guard mkfifo(path, 0o600) == 0 else { throw TestFailure("mkfifo \(path): errno \(errno)") }
        fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else {
            unlink(path)
            throw TestFailure("open \(path): errno \(errno)")
        }
    }

    func signal() { _ = write(fd, "g", 1) }

    func remove() {
        close(fd)
        unlink(path)
    }
}
