// Named ports across processes (S-PORT-6): names validated, a name held by a
// live process refused, a stale name left by a dead one taken over,
// unregistering releases a name, lookups wait for a name that appears later.
// The runtime directory they live in is RuntimeDirectoryTests'.
//
// Parent and children meet in the default runtime directory under names
// unique to the test. Tests about the directory itself run their ports in
// children that set RUNLOOPKIT_RUNTIME_DIR to a directory of the test's own
// (the variable is read by every port creation, so the test process never
// changes it). See Support/PortProcess+CrossProcess.swift.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Port names across processes (S-PORT-6)", .blocksThreads)
struct PortNameServerTests {
    // MARK: - Validation

    static let invalidNames = [
        "", String(repeating: "a", count: 65), "a/b", "/abs", "..", ".", "../up", ".hidden", "-dash", "_under",
        "a b", " lead", "trail ", "tab\tx", "nl\nx", "nul\u{0}x", "del\u{7F}x", "bell\u{7}x", "é", "名前", "a:b", "a*b", "a\\b",
    ]

    @Test("S-PORT-6: invalid names (empty, over 64, '/', '..', leading '.', '-' or '_', spaces, control characters, non-ASCII) are refused with .invalidName by register and lookup, before any file is touched", arguments: invalidNames)
    func invalidNamesAreRefused(name: String) throws {
        let port = try Port(transport: .inproc)
        defer { port.invalidate() }
        let directory = try PortProcess.runtimeDirectory()
        let before = PortProcess.directoryEntries(directory).filter { $0.hasPrefix(name) && !name.isEmpty }

        let registered = PortProcess.error { try PortNameServer.register(port, name: name) }
        #expect(Self.isInvalidName(registered, name), "register: \(String(describing: registered))")
        let started = PortProcess.now()
        let looked = PortProcess.error { _ = try PortNameServer.lookup(name, timeout: .seconds(5)) }
        #expect(Self.isInvalidName(looked, name), "lookup: \(String(describing: looked))")
        #expect(PortProcess.now() - started < 1_000_000_000, "an invalid name is refused at once, not looked for until the timeout")
        let after = PortProcess.directoryEntries(directory).filter { $0.hasPrefix(name) && !name.isEmpty }
        #expect(after == before, "no file was made for an invalid name")
    }

    static func isInvalidName(_ error: (any Error)?, _ name: String) -> Bool {
        if case let .invalidName(refused, _)? = error as? PortError { return refused == name }
        return false
    }

    @Test("S-PORT-6: names at the limits are accepted: 64 characters, a leading digit, '.', '_' and '-' inside")
    func namesAtTheLimitsAreAccepted() throws {
        let stem = "v\(getpid())x\(UInt32.random(in: 0...UInt32.max))"
        let names = [
            stem + String(repeating: "n", count: 64 - stem.count),
            "0\(stem)", "\(stem).a_b-C9",
        ]
        for name in names {
            let port = try Port(transport: .inproc)
            defer {
                port.invalidate()
                PortProcess.removeNameFiles(name)
            }
            try PortNameServer.register(port, name: name)
            #expect(try PortNameServer.lookup(name) === port, "\(name)")
            PortNameServer.unregister(name)
            #expect(Self.becomesFree(name), "\(name) is still registered after unregister")
        }
    }

    /// Whether looking `name` up soon finds nobody holding it. Not at once:
    /// while another thread of this process spawns a process (the exit
    /// tests running in parallel), the new process holds a copy of every
    /// descriptor, the name's locked lock file too, until its exec closes
    /// it (O_CLOEXEC); the flock lives as long as any copy does.
    static func becomesFree(_ name: String, within seconds: Double = 5) -> Bool {
        waitUntil(timeout: seconds) {
            PortProcess.caseName(PortProcess.error { _ = try PortNameServer.lookup(name) }) == "nameNotFound"
        }
    }

    // MARK: - A name held by a live process

    @Test("S-PORT-6: a name held in this process is refused with .nameInUse to a second registration (another port or the same), here and in a child, and keeps resolving to its holder")
    func nameHeldInThisProcessIsRefused() async throws {
        let name = PortProcess.uniqueName("held")
        let holder = try IPCInbox("names-held")
        defer {
            holder.close()
            PortProcess.removeNameFiles(name)
        }
        try PortNameServer.register(holder.port, name: name)
        let other = try Port(transport: .ipc)
        defer { other.invalidate() }
        #expect(PortProcess.error { try PortNameServer.register(other, name: name) } as? PortError == .nameInUse(name, pid: getpid()))
        #expect(PortProcess.error { try PortNameServer.register(holder.port, name: name) } as? PortError == .nameInUse(name, pid: getpid()))
        // The message says it is this very process, not "a live process N".
        #expect(PortError.nameInUse(name, pid: getpid()).description.contains("already registered by this process"))
        // The failed attempts (which open and close the lock file) did not release the lock.
        #expect(try PortNameServer.lookup(name) === holder.port)

        let parentPID = getpid()
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String, parentPID = parentPID as Int32] in
            await PortChild.run {
                let found = try PortNameServer.lookup(name, timeout: .seconds(30))
                PortChild.check(found.ownerProcessID == parentPID && !found.isLocal, "lookup gave \(found)")
                let mine = try Port(transport: .ipc)
                defer { mine.invalidate() }
                let error = PortProcess.error { try PortNameServer.register(mine, name: name) }
                PortChild.check(error as? PortError == .nameInUse(name, pid: parentPID), "register: \(String(describing: error))")
                try found.send(msgid: 7, before: Date() + 10)
            }
        }
        ChildOutput(result).expectSuccess()
        #expect(await holder.arrival(ofCount: 1), "the child's send through the looked-up name arrived")
    }

    @Test("S-PORT-6: a name held by a live child is refused with .nameInUse naming the child; once the child has exited without unregistering, the name is taken over")
    func nameHeldByALiveChildIsRefused() async throws {
        let name = PortProcess.uniqueName("childheld")
        let mine = try IPCInbox("names-mine")
        defer {
            mine.close()
            PortProcess.removeNameFiles(name)
        }
        let parent = ParentSide("names-parent") { () throws -> (Int32, PortError?) in
            let remote = try PortNameServer.lookup(name, timeout: .seconds(60))
            let refusal = PortProcess.error { try PortNameServer.register(mine.port, name: name) } as? PortError
            try remote.send(msgid: 1, before: Date() + 10)  // "you may go"
            return (remote.ownerProcessID, refusal)
        }
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String] in
            await PortChild.run {
                PortChild.report("pid", getpid())
                let inbox = try IPCInbox("child-holder")
                try PortNameServer.register(inbox.port, name: name)
                PortChild.check(await inbox.arrival(ofCount: 1, timeout: 60), "the parent never said go")
                // Exits holding the name: no unregister, no invalidate.
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        let (owner, refusal) = try await parent.value()
        #expect(owner == child.integer("pid").map(Int32.init), child.comment)
        #expect(refusal == .nameInUse(name, pid: owner), "register while the child held the name: \(String(describing: refusal))")
        // The child is gone: its name is stale and is taken over.
        try PortNameServer.register(mine.port, name: name)
        #expect(try PortNameServer.lookup(name) === mine.port)
    }

    // MARK: - Stale names

    enum Death: String, Codable, Sendable, CaseIterable {
        case exitWithoutUnregistering, killed
        var condition: ExitTest.Condition { self == .killed ? .signal(SIGKILL) : .success }
    }

    @Test("S-PORT-6: a stale name left by a dead process (exited without unregistering, or killed) is not found, or said to have died (.nameHolderDied, always when killed, whatever was swept), is taken over, and works across processes again", arguments: Death.allCases)
    func staleNameIsTakenOver(death: Death) async throws {
        let name = PortProcess.uniqueName("stale")
        defer { PortProcess.removeNameFiles(name) }
        let directory = try PortProcess.runtimeDirectory()
        let first = try await #require(processExitsWith: death.condition, observing: [\.standardErrorContent]) {
            [name = name as String, death = death as Death] in
            await PortChild.run {
                let port = try Port(transport: .ipc)
                try PortNameServer.register(port, name: name)
                if death == .killed { kill(getpid(), SIGKILL) }
                _ = port  // exits holding the name
            }
        }
        ChildOutput(first).expectSuccess(finished: death != .killed)
        let socketPath = "\(directory)/\(name).port"
        // A killed holder's name is said so (S-PORT-9), for ten minutes,
        // whoever swept the directory meanwhile (NameHolderDiedTests pins
        // the rule down in a directory of its own). An exiting child may
        // release it first (the port's deinit at the closure's end).
        let stale = PortProcess.caseName(PortProcess.error { _ = try PortNameServer.lookup(name) })
        let expected = death == .killed ? ["nameHolderDied"] : ["nameHolderDied", "nameNotFound"]
        #expect(expected.contains(stale), "a stale name: \(stale)")

        let taker = try IPCInbox("names-taker")
        defer { taker.close() }
        try PortNameServer.register(taker.port, name: name)
        #expect(PortProcess.status(socketPath)?.kind == .socket)
        #expect(PortProcess.status(socketPath)?.permissions == 0o600)
        #expect(try PortNameServer.lookup(name) === taker.port)
        let second = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String] in
            await PortChild.run {
                try PortNameServer.lookup(name, timeout: .seconds(30)).send(msgid: 42, before: Date() + 10)
            }
        }
        ChildOutput(second).expectSuccess()
        #expect(await taker.arrival(ofCount: 1))
        #expect(taker.messages.first?.msgid == 42)
    }

    // MARK: - Unregister

    @Test("S-PORT-6: unregister releases a name: a child unregisters it and the parent takes it while the child lives; the parent unregisters it and the child takes it back")
    func unregisterReleasesTheName() async throws {
        let name = PortProcess.uniqueName("unreg")
        let signalName = PortProcess.uniqueName("unregsig")
        let mine = try IPCInbox("names-unreg")
        defer {
            mine.close()
            PortProcess.removeNameFiles(name)
            PortProcess.removeNameFiles(signalName)
        }
        let parent = ParentSide("unreg-parent") { () throws -> [String] in
            var problems: [String] = []
            // The child registers `signalName` once it has unregistered `name`.
            let child = try PortNameServer.lookup(signalName, timeout: .seconds(60))
            do {
                try PortNameServer.register(mine.port, name: name)
            } catch {
                problems.append("the name the live child unregistered could not be registered: \(error)")
            }
            if !child.isValid { problems.append("the child was not alive while its name was taken") }
            PortNameServer.unregister(name)
            if !PortNameServerTests.becomesFree(name) {
                problems.append("the parent's unregistered name was still found")
            }
            try child.send(msgid: 1, before: Date() + 10)  // "take it back"
            return problems
        }
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String, signalName = signalName as String] in
            await PortChild.run {
                let port = try Port(transport: .ipc)
                try PortNameServer.register(port, name: name)
                PortNameServer.unregister(name)
                PortChild.check(port.isValid, "unregister invalidated the port")
                PortChild.check(PortProcess.caseName(PortProcess.error { _ = try PortNameServer.lookup(name) }) == "nameNotFound",
                                "an unregistered name is still found")
                let inbox = try IPCInbox("child-unreg")
                try PortNameServer.register(inbox.port, name: signalName)
                PortChild.check(await inbox.arrival(ofCount: 1, timeout: 60), "the parent never said go")
                // The parent has unregistered the name: it is free again.
                try PortNameServer.register(port, name: name)
                PortChild.report("retaken", 1)
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        #expect(child.integer("retaken") == 1)
        for problem in try await parent.value() { Issue.record(Comment(rawValue: problem)) }
    }

    // MARK: - Lookup

    @Test("S-PORT-6: looking up a name nobody registered throws .nameNotFound: at once with no timeout, after the timeout with one")
    func lookupOfAMissingName() throws {
        let name = PortProcess.uniqueName("missing")
        defer { PortProcess.removeNameFiles(name) }
        #expect(PortProcess.error { _ = try PortNameServer.lookup(name) } as? PortError == .nameNotFound(name))
        let started = PortProcess.now()
        #expect(PortProcess.error { _ = try PortNameServer.lookup(name, timeout: .seconds(0.3)) } as? PortError == .nameNotFound(name))
        let waited = PortProcess.now() - started
        #expect(waited >= 290_000_000 && waited < 5_000_000_000, "lookup(timeout: 0.3) gave up after \(waited) ns")
    }

    @Test("S-PORT-6: lookup(timeout:) waits for a name that a child registers later, and returns a send right to the child's port")
    func lookupWaitsForAChildThatRegistersLater() async throws {
        let name = PortProcess.uniqueName("later")
        defer { PortProcess.removeNameFiles(name) }
        #expect(PortProcess.error { _ = try PortNameServer.lookup(name) } as? PortError == .nameNotFound(name))
        let looking = DispatchSemaphore(value: 0)
        // Started before the child exists; the child registers 300 ms after it starts.
        let parent = ParentSide("later-parent") { () throws -> (Int32, Double) in
            looking.signal()
            let started = PortProcess.now()
            let remote = try PortNameServer.lookup(name, timeout: .seconds(60))
            let waited = Double(PortProcess.now() - started) / 1e9
            try remote.send(msgid: 1, before: Date() + 10)  // "you may go"
            return (remote.ownerProcessID, waited)
        }
        #expect(looking.wait(timeout: .now() + 30) == .success)
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String] in
            await PortChild.run {
                PortChild.report("pid", getpid())
                PortProcess.pause(milliseconds: 300)  // the input: a server that starts late
                let inbox = try IPCInbox("child-later")
                try PortNameServer.register(inbox.port, name: name)
                PortChild.check(await inbox.arrival(ofCount: 1, timeout: 60), "the parent's lookup never reached the child")
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        let (owner, waited) = try await parent.value()
        #expect(owner == child.integer("pid").map(Int32.init), child.comment)
        #expect(waited >= 0.3, "the lookup returned after \(waited) s, before the child could have registered")
        print("S-PORT-6: lookup(timeout:) found a name registered by a late child after \(Int(waited * 1000)) ms")
    }
}
