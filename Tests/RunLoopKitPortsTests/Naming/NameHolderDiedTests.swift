// S-PORT-9: for ten minutes after a name's holder is first found dead,
// every reader, in any process however new, is told `.nameHolderDied`: the
// first to find the holder dead writes a death mark in the name file under
// the name's lock, sweeps keep the name's files while the mark stands and
// remove them after, and a registration takes the name over at once.
//
// Each test has a runtime directory of its own. The holder is `ipc-demo
// server NAME`, killed with SIGKILL; every reader is a child that never used
// the directory before (its first use sweeps it), or the python reader that
// follows docs/wire-format.md. This process reads the name file's bytes
// itself and never uses the directory through the library.
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("A dead holder's name is said so for ten minutes (S-PORT-9)", .blocksThreads)
struct NameHolderDiedTests {
    /// Starts `ipc-demo server NAME` in `directory`, waits until it holds
    /// the name, SIGKILLs it; returns its pid.
    static func killedHolder(of name: String, in directory: String) throws -> Int32 {
        let holder = try SpawnedProgram(
            "ipc-demo", ["server", name], environment: ["RUNLOOPKIT_RUNTIME_DIR": directory], in: directory)
        let registered = waitUntil(timeout: 60) {
            if case let .held(address) = NameLock.inspect(directory + "/\(name).lock") { return address.pid == holder.pid }
            return false
        }
        holder.killAndReap()
        try #require(registered, "the holder never registered \(name): \(holder.errorOutput)")
        return holder.pid
    }

    /// The name file's bytes as the document reads them.
    static func nameFile(_ name: String, in directory: String) -> WireFormat.NameFile? {
        let fd = open(directory + "/\(name).lock", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return NameLock.readNameFile(fd)?.file
    }

    /// A fresh process: its first use of `directory` is this lookup.
    static func lookUpInAFreshProcess(
        _ name: String, in directory: String, window: String? = nil
    ) async throws -> ChildOutput {
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [name = name as String, directory = directory as String, window = window as String?] in
            await PortChild.run {
                if let window { setenv("RUNLOOPKIT_DEAD_HOLDER_WINDOW", window, 1) }
                PortChild.useRuntimeDirectory(directory)
                let error = PortProcess.error { _ = try PortNameServer.lookup(name) } as? PortError
                PortChild.report("answer", error.map { PortProcess.caseName($0) } ?? "found")
                if case let .nameHolderDied(_, pid)? = error { PortChild.report("pid", pid) }
                let kept = PortProcess.exists(directory + "/\(name).lock") && PortProcess.exists(directory + "/\(name).port")
                PortChild.report("kept", kept ? 1 : 0)
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        return child
    }

    @Test("S-PORT-9: after a holder's SIGKILL, a fresh process (whose first use of the directory sweeps it) gets .nameHolderDied naming it, marks the time once, and leaves the files; a second fresh process and the python reader get the same from that mark; once the mark is older than the window, a fresh process's sweep removes the files and lookups say .nameNotFound")
    func freshProcessesAreToldTheHolderDied() async throws {
        try #require(SpawnedProgram.isBuilt("ipc-demo"), "needs the examples built (swift build)")
        let directory = try PortProcess.makeTemporaryDirectory("died-fresh")
        defer { PortProcess.removeTree(directory) }
        let dead = try Self.killedHolder(of: "served", in: directory)
        #expect(Self.nameFile("served", in: directory)?.diedAt == nil, "nobody has looked yet: no mark")

        let before = DeadHolderMark.now()
        let first = try await Self.lookUpInAFreshProcess("served", in: directory)
        #expect(first.reports["answer"] == "nameHolderDied" && first.integer("pid") == Int(dead), first.comment)
        #expect(first.integer("kept") == 1, "the first process's sweep removed a name whose holder just died")
        let marked = try #require(Self.nameFile("served", in: directory), "the name file no longer decodes")
        let diedAt = try #require(marked.diedAt, "the first process to find the holder dead wrote no mark")
        #expect(marked.holder.pid == dead)
        #expect(diedAt >= before && diedAt <= DeadHolderMark.now(), "the mark is the time it was found dead")

        let second = try await Self.lookUpInAFreshProcess("served", in: directory)
        #expect(second.reports["answer"] == "nameHolderDied" && second.integer("pid") == Int(dead), second.comment)
        #expect(second.integer("kept") == 1)
        let python = try SpawnedProgram(
            path: "/usr/bin/env", ["python3", NameLookupTests.foreignPeer("lookup_name.py"), directory, "served", "1"], in: directory)
        #expect(python.waitForExit(timeout: 60) == 0, "\(python.errorOutput)")
        #expect(python.output.split(separator: " ").dropFirst().joined(separator: " ") == "died \(dead)\n", "python: \(python.output)")
        #expect(Self.nameFile("served", in: directory)?.diedAt == diedAt, "a later reader rewrote the first one's mark")

        // The window passes (a one-second window, waited for by the clock).
        let windowPassed = waitUntil(timeout: 30) { DeadHolderMark.now() - diedAt > 1_100_000_000 }
        #expect(windowPassed)
        let late = try await Self.lookUpInAFreshProcess("served", in: directory, window: "1")
        #expect(late.reports["answer"] == "nameNotFound", late.comment)
        #expect(late.integer("kept") == 0, "the sweep kept a name whose mark is older than the window")
        #expect(PortProcess.directoryEntries(directory).filter { $0.hasPrefix("served.") } == [])
    }

    @Test("S-PORT-9: inside the window, a registration takes a dead holder's name over: lookups then find the new holder at once (RunLoopKit's and the python reader's, which marked the death first), and the file holds no mark")
    func registrationTakesTheNameOverInsideTheWindow() async throws {
        try #require(SpawnedProgram.isBuilt("ipc-demo"), "needs the examples built (swift build)")
        let directory = try PortProcess.makeTemporaryDirectory("died-takeover")
        defer { PortProcess.removeTree(directory) }
        let dead = try Self.killedHolder(of: "served", in: directory)
        let script = NameLookupTests.foreignPeer("lookup_name.py")
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [directory = directory as String, dead = dead as Int32, script = script as String] in
            await PortChild.run {
                PortChild.useRuntimeDirectory(directory)
                func python() -> String {
                    guard let reader = try? SpawnedProgram(path: "/usr/bin/env", ["python3", script, directory, "served", "1"], in: directory),
                          reader.waitForExit(timeout: 60) == 0 else { return "python failed" }
                    return reader.output.split(separator: " ").dropFirst().joined(separator: " ")
                }
                // The python reader is the first to find the holder dead.
                PortChild.check(python() == "died \(dead)\n", "python before the takeover")
                let died = PortProcess.error { _ = try PortNameServer.lookup("served") } as? PortError
                PortChild.check(died == .nameHolderDied("served", pid: dead), "before the takeover: \(String(describing: died))")
                let taker = try Port(transport: .ipc)
                try PortNameServer.register(taker, name: "served")
                PortChild.check((try? PortNameServer.lookup("served")) === taker, "the dead holder's name was not taken over")
                let seen = python().split(separator: " ")
                PortChild.check(seen.first == "held" && seen.dropFirst().first == "\(getpid())",
                                "python after the takeover: \(seen.joined(separator: " "))")
                let fd = open(directory + "/served.lock", O_RDONLY | O_CLOEXEC)
                PortChild.check(NameLock.readNameFile(fd)?.file.diedAt == nil, "the takeover left the death mark")
                close(fd)
                withExtendedLifetime(taker) {}
            }
        }
        ChildOutput(result).expectSuccess()
    }

    @Test("S-PORT-9: the window is 600 s by default, RUNLOOPKIT_DEAD_HOLDER_WINDOW seconds when the environment says so, and 600 s again when what it says is not a number of seconds; a mark stands inside it, and not past it either way", arguments: [
        (nil, Int64(600_000_000_000)), ("2.5", 2_500_000_000), ("0", 0), ("soon", 600_000_000_000), ("-3", 600_000_000_000),
    ] as [(String?, Int64)])
    func windowFromTheEnvironment(setting: String?, expected: Int64) async {
        await #expect(processExitsWith: .success) { [setting, expected] in
            if let setting { setenv("RUNLOOPKIT_DEAD_HOLDER_WINDOW", setting, 1) } else { unsetenv("RUNLOOPKIT_DEAD_HOLDER_WINDOW") }
            guard DeadHolderMark.window == expected else { exit(1) }
            let now = DeadHolderMark.now()
            let stands = expected > 0 && DeadHolderMark.stands(now - expected + 1, now: now) && DeadHolderMark.stands(now + expected - 1, now: now)
            let fallen = !DeadHolderMark.stands(now - expected, now: now) && !DeadHolderMark.stands(now + expected, now: now)
            guard (stands || expected == 0) && fallen else { exit(2) }
        }
    }
}
