// Named ports across processes (S-PORT-6), and the per-user runtime
// directory they live in: names validated, a name held by a live process
// refused, a stale name left by a dead one taken over, unregistering
// releases a name, lookups wait for a name that appears later, the 107-byte
// socket path limit, modes 0700/0600, unsafe directories refused, and the
// socket files of exited processes cleaned up.
//
// Parent and children meet in the default runtime directory under names
// unique to the test. Tests about the directory itself run their ports in
// children that set RUNLOOPKIT_RUNTIME_DIR to a directory of the test's own
// (the variable is read by every port creation, so the test process never
// changes it). See PortProcessSupport.swift.
import Dispatch
import Glibc
import RunLoopKit
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("Port names and the runtime directory across processes (S-PORT-6)")
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

    @Test("S-PORT-6: a stale name left by a dead process (exited without unregistering, or killed) is not found (its holder died, or it was swept), is taken over, and works across processes again", arguments: Death.allCases)
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
        // A stale name is not found: its holder died (S-PORT-9), or, once a
        // process started since has swept the directory (any other test's
        // child may have), it is gone. NameLookupTests pins the first case
        // down in a directory of its own.
        let stale = PortProcess.caseName(PortProcess.error { _ = try PortNameServer.lookup(name) })
        #expect(stale == "nameHolderDied" || stale == "nameNotFound", "a stale name: \(stale)")

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

    // MARK: - The runtime directory

    /// A directory whose path is exactly `length` bytes, under a fresh temporary directory.
    static func directory(ofLength length: Int, in parent: String) -> String {
        parent + "/" + String(repeating: "d", count: length - parent.utf8.count - 1)
    }

    @Test("S-PORT-6: socket paths over 107 bytes are refused with .pathTooLong (an anonymous ipc port, a name); exactly 107 bytes works")
    func socketPathsOverTheLimitAreRefused() async throws {
        let temporary = try PortProcess.makeTemporaryDirectory("long")
        defer { PortProcess.removeTree(temporary) }
        // 100 bytes: "<dir>/x.port" is 107 bytes, "<dir>/xy.port" 108.
        let directory = Self.directory(ofLength: 100, in: temporary)
        #expect(mkdir(directory, 0o700) == 0)
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [directory = directory as String] in
            await PortChild.run {
                PortChild.useRuntimeDirectory(directory)
                let anonymous = PortProcess.error { _ = try Port(transport: .ipc) }
                if case let .pathTooLong(path, limit)? = anonymous as? PortError {
                    PortChild.check(limit == 107 && path.utf8.count > 107 && path.hasPrefix(directory + "/"), "pathTooLong(\(path), \(limit))")
                } else {
                    PortChild.fail("an ipc port whose socket path is over 107 bytes: \(String(describing: anonymous))")
                }
                let port = try Port(transport: .inproc)
                try PortNameServer.register(port, name: "x")
                PortChild.check(PortProcess.status(directory + "/x.port")?.kind == .socket, "no socket at the 107-byte path")
                PortChild.check((try? PortNameServer.lookup("x")) === port, "the 107-byte name does not resolve")
                let long = try Port(transport: .inproc)
                let named = PortProcess.error { try PortNameServer.register(long, name: "xy") }
                PortChild.check(PortProcess.caseName(named) == "pathTooLong", "register with a 108-byte path: \(String(describing: named))")
                let looked = PortProcess.error { _ = try PortNameServer.lookup("xy") }
                PortChild.check(PortProcess.caseName(looked) == "pathTooLong", "lookup with a 108-byte path: \(String(describing: looked))")
            }
        }
        ChildOutput(result).expectSuccess()
    }

    @Test("S-PORT-6: the runtime directory is made with mode 0700, owned by the user; ipc and name sockets are 0600 and lock files 0600, whatever the umask")
    func runtimeDirectoryAndFilesArePrivate() async throws {
        // The default directory of this process.
        let defaultDirectory = try PortProcess.runtimeDirectory()
        #expect(PortProcess.status(defaultDirectory) == .init(kind: .directory, permissions: 0o700, owner: getuid()))

        // A directory the library makes, in a child whose umask is 0.
        let temporary = try PortProcess.makeTemporaryDirectory("modes")
        defer { PortProcess.removeTree(temporary) }
        let directory = temporary + "/runtime"
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [directory = directory as String] in
            await PortChild.run {
                _ = umask(0)
                PortChild.useRuntimeDirectory(directory)
                let port = try Port(transport: .ipc)
                defer { port.invalidate() }
                try PortNameServer.register(port, name: "named")
                let expected: [(String, PortProcess.FileStatus)] = [
                    (directory, .init(kind: .directory, permissions: 0o700, owner: getuid())),
                    (PortProcess.socketPath(of: port) ?? "?", .init(kind: .socket, permissions: 0o600, owner: getuid())),
                    (directory + "/named.port", .init(kind: .socket, permissions: 0o600, owner: getuid())),
                    (directory + "/named.lock", .init(kind: .file, permissions: 0o600, owner: getuid())),
                ]
                for (path, status) in expected {
                    let actual = PortProcess.status(path)
                    PortChild.check(actual == status, "\(path): \(actual.map(\.description) ?? "missing"), expected \(status)")
                }
            }
        }
        ChildOutput(result).expectSuccess()
    }

    enum UnsafeDirectory: String, Codable, Sendable, CaseIterable {
        case symlink, danglingSymlink, regularFile, otherOwner, openToOthers, stickyOpenToOthers
    }

    @Test("S-PORT-6: an unsafe runtime directory is refused with .runtimeDirectoryUnsafe (a symlink, a file, another user's); one of ours that is open to others is made 0700", arguments: UnsafeDirectory.allCases)
    func unsafeRuntimeDirectories(kind: UnsafeDirectory) async throws {
        let temporary = try PortProcess.makeTemporaryDirectory("unsafe")
        defer { PortProcess.removeTree(temporary) }
        let target = temporary + "/target"
        #expect(mkdir(target, 0o700) == 0)
        let path = temporary + "/runtime"
        switch kind {
        case .symlink: #expect(symlink(target, path) == 0)
        case .danglingSymlink: #expect(symlink(temporary + "/nowhere", path) == 0)
        case .regularFile: #expect(close(open(path, O_CREAT | O_WRONLY, 0o600)) == 0)
        case .otherOwner:
            #expect(mkdir(path, 0o700) == 0)
            // As root, give it away; as another user, a directory of root's stands in.
            if getuid() == 0 { #expect(chown(path, 65534, 65534) == 0) }
        case .openToOthers:
            #expect(mkdir(path, 0o700) == 0 && chmod(path, 0o777) == 0)
        case .stickyOpenToOthers:
            #expect(mkdir(path, 0o700) == 0 && chmod(path, 0o1777) == 0)
        }
        let runtime = (kind == .otherOwner && getuid() != 0) ? "/usr" : path
        let refused = kind != .openToOthers && kind != .stickyOpenToOthers

        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [runtime = runtime as String, refused = refused as Bool] in
            await PortChild.run {
                PortChild.useRuntimeDirectory(runtime)
                func isUnsafe(_ error: (any Error)?) -> Bool {
                    if case let .runtimeDirectoryUnsafe(path, _)? = error as? PortError { return path == runtime }
                    return false
                }
                let attempts: [(String, () throws -> Void)] = [
                    ("Port(transport: .ipc)", { _ = try Port(transport: .ipc).invalidate() }),
                    ("PortNameServer.directory()", { _ = try PortNameServer.directory() }),
                    ("register", { try PortNameServer.register(try Port(transport: .inproc), name: "n") }),
                    ("lookup", { _ = try PortNameServer.lookup("n") }),
                ]
                for (what, attempt) in attempts {
                    let error = PortProcess.error(of: attempt)
                    if refused {
                        PortChild.check(isUnsafe(error), "\(what): \(String(describing: error))")
                    } else if what != "lookup" {
                        PortChild.check(error == nil, "\(what): \(String(describing: error))")
                    }
                }
            }
        }
        ChildOutput(result).expectSuccess()
        if refused {
            // Nothing was made through the symlink.
            #expect(PortProcess.directoryEntries(target) == [])
        } else {
            #expect(PortProcess.status(path)?.permissions == 0o700, "the open directory was made private: \(String(describing: PortProcess.status(path)))")
        }
    }

    // MARK: - Cleaning up after processes

    @Test("S-PORT-6: a child that exits normally leaves no socket files behind: its anonymous ipc sockets and its name's socket are removed at exit")
    func exitedProcessLeavesNoSocketFiles() async throws {
        let directory = try PortProcess.makeTemporaryDirectory("cleanup")
        defer { PortProcess.removeTree(directory) }
        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [directory = directory as String] in
            await PortChild.run {
                PortChild.useRuntimeDirectory(directory)
                // Still open at exit: never invalidated, never unregistered.
                let ports = try (0..<3).map { _ in try Port(transport: .ipc) }
                try PortNameServer.register(ports[0], name: "named")
                let paths = ports.compactMap(PortProcess.socketPath(of:)) + [directory + "/named.port"]
                for path in paths { PortChild.check(PortProcess.status(path)?.kind == .socket, "\(path) is not a socket") }
                PortChild.report("paths", paths.joined(separator: ","))
                PortChild.report("pid", getpid())
                withExtendedLifetime(ports) {}
            }
        }
        let child = ChildOutput(result)
        child.expectSuccess()
        let paths = try #require(child.reports["paths"], child.comment).split(separator: ",").map(String.init)
        #expect(paths.count == 4)
        for path in paths { #expect(!PortProcess.exists(path), "\(path) outlived its process") }
        // Only the name's lock file and the host's id stay (by design, S-PORT-8).
        #expect(PortProcess.directoryEntries(directory) == ["host-id", "named.lock"])
    }

    @Test("S-PORT-6: the socket files of a killed process stay until the next process using the directory sweeps them, and its stale name is taken over; files of live processes are left alone")
    func killedProcessFilesAreSwept() async throws {
        let directory = try PortProcess.makeTemporaryDirectory("sweep")
        defer { PortProcess.removeTree(directory) }
        let killed = try await #require(processExitsWith: .signal(SIGKILL), observing: [\.standardErrorContent]) {
            [directory = directory as String] in
            await PortChild.run {
                PortChild.useRuntimeDirectory(directory)
                let ports = try (0..<2).map { _ in try Port(transport: .ipc) }
                try PortNameServer.register(ports[0], name: "named")
                PortChild.report("paths", ports.compactMap(PortProcess.socketPath(of:)).joined(separator: ","))
                kill(getpid(), SIGKILL)
            }
        }
        let first = ChildOutput(killed)
        first.expectSuccess(finished: false)
        let stale = try #require(first.reports["paths"], first.comment).split(separator: ",").map(String.init)
        #expect(stale.count == 2)
        for path in stale + [directory + "/named.port"] {
            #expect(PortProcess.status(path)?.kind == .socket, "\(path): nothing ran at the kill, the file stays")
        }
        // A file named like the socket of a live process (this one): the sweep must leave it.
        let live = directory + "/p\(getpid())-999999.sock"
        #expect(close(open(live, O_CREAT | O_WRONLY, 0o600)) == 0)

        let result = try await #require(processExitsWith: .success, observing: [\.standardErrorContent]) {
            [directory = directory as String, stale = stale as [String], live = live as String] in
            await PortChild.run {
                PortChild.useRuntimeDirectory(directory)
                _ = try PortNameServer.directory()  // the first use of the directory sweeps it
                for path in stale { PortChild.check(!PortProcess.exists(path), "\(path) of a dead process was not swept") }
                PortChild.check(PortProcess.exists(live), "the file of a live process was swept")
                let port = try Port(transport: .ipc)
                try PortNameServer.register(port, name: "named")  // the stale name is taken over
                PortChild.check((try? PortNameServer.lookup("named")) === port, "the stale name was not taken over")
                withExtendedLifetime(port) {}
            }
        }
        ChildOutput(result).expectSuccess()
        #expect(PortProcess.exists(live))
        unlink(live)
        #expect(PortProcess.directoryEntries(directory) == ["host-id", "named.lock"])
    }
}
