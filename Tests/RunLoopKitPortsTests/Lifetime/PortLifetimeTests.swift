// Ports and their receivers are freed once they are invalidated, or once
// nothing references them (docs/contributing.md, "Nothing leaks, nothing
// hangs"; "AddressSanitizer and leaks"): the live counts of `Port` and
// `PortReceiver` come back to where they started after every way of using a
// port, retain cycles through handlers included.
//
// The counts are process-wide, so the experiment runs in a child process
// (an exit test) where no test running in parallel makes ports meanwhile.
// Under AddressSanitizer, LeakSanitizer checks that child at its exit too.
import Glibc
import RunLoopKit
import Synchronization
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Ports are freed (live counts)", .blocksThreads)
struct PortLifetimeTests {
    /// What the child runs, in order, each checked against the start.
    static let scenarios = [
        "local ports keeping their messages", "ipc ports keeping their messages", "a port dropped without invalidate",
        "a port that received itself, dropped", "request reply ports", "async request reply ports", "an async message stream", "in-place handlers",
        "send rights",
    ]

    @Test("Live Ports and PortReceivers return to their start after local inproc and ipc ports, ports in messages, dropped ports, request reply ports, async requests and streams, in-place handlers and send rights")
    func liveCountsReturnToTheirStart() async throws {
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            await PortChild.run { try await PortLifetimeTests.useAndReleasePorts() }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        #expect(child.integer("scenarios") == Self.scenarios.count, child.comment)
        #expect(child.integer("portsEnd") != nil && child.integer("portsEnd") == child.integer("portsStart"), child.comment)
        #expect(child.integer("receiversEnd") != nil && child.integer("receiversEnd") == child.integer("receiversStart"), child.comment)
        // The counts moved: the scenarios did make ports.
        #expect((child.integer("portsPeak") ?? 0) > (child.integer("portsStart") ?? 0), child.comment)
    }

    // MARK: - The child

    /// In the child: each scenario, then a wait (an expectation with a
    /// generous deadline, not a sleep) for the counts to come back to the
    /// start: some releases happen on other threads after the scenario
    /// returns (a loop thread's teardown, a task's end).
    static func useAndReleasePorts() async throws {
        let start = Counts.now
        PortChild.report("portsStart", start.ports)
        PortChild.report("receiversStart", start.receivers)
        let peak = Locked(start.ports)
        let note: @Sendable () -> Void = { peak.withLock { $0 = max($0, Counts.now.ports) } }
        var done = 0
        for scenario in scenarios {
            switch scenario {
            case "local ports keeping their messages": try portsKeepingMessages(.inproc, note)
            case "ipc ports keeping their messages": try portsKeepingMessages(.ipc, note)
            case "a port dropped without invalidate": try droppedPort(note)
            case "a port that received itself, dropped": try droppedPortThatReceivedItself(note)
            case "request reply ports": try requestReplyPorts(note)
            case "async request reply ports": try await asyncRequestReplyPorts(note)
            case "an async message stream": try await messageStream(note)
            case "in-place handlers": try inPlaceHandler(note)
            case "send rights": try sendRights(note)
            default: PortChild.fail("unknown scenario \(scenario)")
            }
            let back = waitUntil(timeout: 30) { Counts.now == start }
            PortChild.check(back, "after \(scenario): \(Counts.now) live, \(start) at the start")
            done += 1
        }
        PortChild.report("scenarios", done)
        PortChild.report("portsPeak", peak.value)
        PortChild.report("portsEnd", Counts.now.ports)
        PortChild.report("receiversEnd", Counts.now.receivers)
    }

    /// The live counts.
    struct Counts: Equatable, CustomStringConvertible {
        let ports: Int
        let receivers: Int

        static var now: Counts {
            Counts(ports: Port.liveCount.load(ordering: .acquiring), receivers: PortReceiver.liveCount.load(ordering: .acquiring))
        }

        var description: String { "\(ports) ports, \(receivers) receivers" }
    }

    // MARK: - Scenarios

    /// A server whose handler keeps every message (each holds the server as
    /// its receivePort: a cycle through the handler) and replies to its reply
    /// port; messages carry a port component, the server itself and a reply
    /// port (all in the server's descriptor cache). Everything invalidated.
    private static func portsKeepingMessages(_ transport: Port.Transport, _ note: () -> Void) throws {
        let thread = try startedThread("lifetime-keep")
        defer { thread.stop() }
        let server = try Port(transport: transport)
        let component = try Port(transport: transport)
        let replies = try Port(transport: transport)
        defer { for port in [server, component, replies] { port.invalidate() } }
        let kept = Locked<[PortMessage]>([])
        let answered = IPCCounter()
        server.setMessageHandler { message in
            kept.withLock { $0.append(message) }
            try? message.replyPort?.send(msgid: message.msgid, components: [.port(server)], before: Date() + 10)
        }
        replies.setMessageHandler { message in
            kept.withLock { $0.append(message) }
            answered.add()
        }
        try server.schedule(on: thread)
        try replies.schedule(on: thread)
        let count = 20
        for index in 0..<count {
            try server.send(msgid: UInt32(index), components: [.data(Data(repeating: 7, count: 100)), .port(component), .port(server)],
                            replyPort: replies, before: Date() + 10)
        }
        guard answered.wait(atLeast: count) else { throw TestFailure("\(answered.current) of \(count) replies arrived") }
        note()
    }

    /// A port nobody references any more, never invalidated: its deinit
    /// closes it (its handler keeps nothing).
    private static func droppedPort(_ note: () -> Void) throws {
        let thread = try startedThread("lifetime-drop")
        defer { thread.stop() }
        let arrived = IPCCounter()
        do {
            let port = try Port(transport: .ipc)
            port.setMessageHandler { _ in arrived.add() }
            try port.schedule(on: thread)
            for index in 0..<10 { try port.send(msgid: UInt32(index), before: Date() + 10) }
            guard arrived.wait(atLeast: 10) else { throw TestFailure("\(arrived.current) of 10 messages arrived") }
            note()
        }
    }

    /// A port that received its own descriptor (as reply port and as a
    /// component) is held by its receiver's descriptor cache, so dropping
    /// it does not free it (docs/contributing.md, "Known: what only
    /// `invalidate()` frees"); invalidating it, found through a weak
    /// reference, does.
    private static func droppedPortThatReceivedItself(_ note: () -> Void) throws {
        let thread = try startedThread("lifetime-self")
        defer { thread.stop() }
        let arrived = IPCCounter()
        weak var dropped: Port?
        do {
            let port = try Port(transport: .inproc)
            port.setMessageHandler { _ in arrived.add() }
            try port.schedule(on: thread)
            try port.send(msgid: 1, components: [.port(port)], replyPort: port, before: Date() + 10)
            guard arrived.wait(atLeast: 1) else { throw TestFailure("the message did not arrive") }
            dropped = port
            note()
        }
        PortChild.report("selfHeldAfterDrop", dropped == nil ? 0 : 1)
        dropped?.invalidate()
    }

    /// Synchronous requests from a loop thread, inproc and ipc: each level
    /// of each thread gets a reply port, kept by the thread until it exits.
    private static func requestReplyPorts(_ note: @escaping @Sendable () -> Void) throws {
        let serverThread = try startedThread("lifetime-server")
        defer { serverThread.stop() }
        let server = try Port(transport: .ipc)
        defer { server.invalidate() }
        server.setMessageHandler { message in
            try? message.replyPort?.send(msgid: message.msgid, components: message.components, before: Date() + 10)
        }
        try server.schedule(on: serverThread)
        let client = try startedThread("lifetime-client")
        defer { client.stop() }
        let msgids = try client.performAndWait {
            let replies = try (UInt32(0)..<10).map { try server.sendRequest(msgid: $0, sendTimeout: 10, receiveTimeout: 30).msgid }
            note()
            return replies
        }
        guard msgids == Array(0..<10) else { throw TestFailure("replies \(msgids)") }
    }

    /// `request(msgid:components:timeout:)`: a fresh reply port per request,
    /// on RunLoopKit's async-ports thread.
    private static func asyncRequestReplyPorts(_ note: () -> Void) async throws {
        let thread = try startedThread("lifetime-async")
        defer { thread.stop() }
        let server = try Port(transport: .inproc)
        defer { server.invalidate() }
        server.setMessageHandler { message in
            try? message.replyPort?.send(msgid: message.msgid + 1, before: Date() + 10)
        }
        try server.schedule(on: thread)
        for msgid in UInt32(0)..<5 {
            let reply = try await server.request(msgid: msgid, timeout: .seconds(30))
            guard reply.msgid == msgid + 1 else { throw TestFailure("reply \(reply.msgid) to request \(msgid)") }
        }
        note()
    }

    /// `messages()`: an AsyncStream fed by the port's handler, ended by its
    /// invalidation.
    private static func messageStream(_ note: () -> Void) async throws {
        let port = try Port(transport: .inproc)
        let stream = try port.messages()
        for index in 0..<3 { try port.send(msgid: UInt32(index), components: [.port(port)], replyPort: port, before: Date() + 10) }
        var seen: [UInt32] = []
        for await message in stream {
            seen.append(message.msgid)
            if seen.count == 3 { break }
        }
        note()
        port.invalidate()
        guard seen == [0, 1, 2] else { throw TestFailure("stream gave \(seen)") }
    }

    /// An in-place handler that makes a `PortMessage` of each view and
    /// keeps it (a reply port and port components included).
    private static func inPlaceHandler(_ note: () -> Void) throws {
        let thread = try startedThread("lifetime-view")
        defer { thread.stop() }
        let port = try Port(transport: .inproc)
        let other = try Port(transport: .ipc)
        defer { port.invalidate(); other.invalidate() }
        let kept = Locked<[PortMessage]>([])
        let arrived = IPCCounter()
        port.setInPlaceMessageHandler { view in
            kept.withLock { $0.append(view.makeMessage()) }
            arrived.add()
        }
        try port.schedule(on: thread)
        for index in 0..<10 {
            try port.send(msgid: UInt32(index), components: [.port(other), .data(Data(repeating: 1, count: 64))],
                          replyPort: index.isMultiple(of: 2) ? port : other, before: Date() + 10)
        }
        guard arrived.wait(atLeast: 10) else { throw TestFailure("\(arrived.current) of 10 messages arrived") }
        note()
    }

    /// Send rights: a descriptor that names a port of this process resolves
    /// to the port itself; one whose port is gone, to an invalid send right.
    /// (Send rights to other processes' ports are not here: the registry
    /// keeps the most recent ones for the process's life, by design.)
    private static func sendRights(_ note: () -> Void) throws {
        let port = try Port(transport: .ipc)
        guard Port.resolve(port.address) === port else { throw TestFailure("a local port did not resolve to itself") }
        let address = port.address
        port.invalidate()
        let right = Port.resolve(address)
        note()
        guard !right.isLocal, !right.isValid else { throw TestFailure("a gone port resolved to \(right)") }
    }

    private static func startedThread(_ name: String) throws -> LoopThread {
        let thread = LoopThread(name: name)
        try thread.start()
        return thread
    }
}
