// The per-user runtime directory named ports live in (S-PORT-6): the
// 107-byte socket path limit, modes 0700/0600 whatever the umask, unsafe
// directories refused, and the socket files of exited and killed processes
// cleaned up.
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

@Suite("The runtime directory of named ports (S-PORT-6)", .blocksThreads)
struct RuntimeDirectoryTests {
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
