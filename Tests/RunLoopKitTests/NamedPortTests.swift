// Named ports (S-PORT-6) and the death of a remote port's process (S-PORT-5):
// names validated, a live holder refused, a stale name taken over, file
// modes, the ipc path limit, and a remote port that becomes invalid when its
// process exits. The other processes are exit-test children; the parent
// passes them a name through the environment and they talk back through
// files in a private directory.
import Dispatch
import Glibc
@testable import RunLoopKit
import Testing

@Suite("Named ports (S-PORT-6) and peer death (S-PORT-5)")
struct NamedPortTests {
    static func uniqueName(_ stem: String) -> String { "rlk-test-\(stem)-\(getpid())-\(UInt32.random(in: 0...UInt32.max))" }

    // MARK: - In one process

    @Test("S-PORT-6: names are validated: no empty, overlong, path or control-character names", arguments: [
        "", String(repeating: "a", count: 65), "a/b", "../x", ".hidden", "-dash", "_under", "sp ace", "tab\t", "nul\u{0}x", "é",
    ])
    func invalidNames(_ name: String) throws {
        let port = try Port(transport: .ipc)
        defer { port.invalidate() }
        #expect(throws: PortError.self) { try PortNameServer.register(port, name: name) }
        do {
            try PortNameServer.register(port, name: name)
        } catch let error {
            guard case .invalidName = error else { Issue.record("expected .invalidName, got \(error)"); return }
        }
        #expect(throws: PortError.self) { _ = try PortNameServer.lookup(name) }
    }

    @Test("S-PORT-6: register and look up a name; a live holder (this process) is refused; unregister frees it; a missing name is not found")
    func registerLookupUnregister() throws {
        let name = Self.uniqueName("basic")
        let port = try Port(transport: .ipc)
        defer { port.invalidate() }
        try PortNameServer.register(port, name: name)
        #expect(try PortNameServer.lookup(name) === port, "within one process a name resolves to the port itself (S-PORT-3)")

        let other = try Port(transport: .ipc)
        defer { other.invalidate() }
        do {
            try PortNameServer.register(other, name: name)
            Issue.record("a name held by a live process was registered twice")
        } catch let error {
            #expect(error == .nameInUse(name, pid: getpid()))
        }

        PortNameServer.unregister(name)
        #expect(throws: PortError.nameNotFound(name)) { _ = try PortNameServer.lookup(name) }
        try PortNameServer.register(other, name: name)
        #expect(try PortNameServer.lookup(name) === other)
        other.invalidate()  // invalidation releases the name too
        #expect(throws: PortError.nameNotFound(name)) { _ = try PortNameServer.lookup(name) }
    }

    @Test("S-PORT-6: lookup(timeout:) waits for a name that another thread registers later")
    func lookupWaitsForName() throws {
        let name = Self.uniqueName("later")
        let port = try Port(transport: .ipc)
        defer { port.invalidate() }
        let registrar = LoopThread(name: "registrar")
        try registrar.start()
        defer { registrar.stop() }
        try registrar.perform {
            // Registered while the test thread is already looking.
            _ = try? registrar.runLoop?.perform(afterDelay: 0.05) { try? PortNameServer.register(port, name: name) }
        }
        #expect(try PortNameServer.lookup(name, timeout: 30) === port)
    }

    @Test("S-PORT-6: the runtime directory is 0700 and socket and lock files are 0600")
    func fileModes() throws {
        let name = Self.uniqueName("modes")
        let port = try Port(transport: .ipc)
        defer { port.invalidate() }
        try PortNameServer.register(port, name: name)
        let directory = try PortNameServer.directory()
        #expect(Self.mode(directory) == 0o700)
        #expect(Self.mode(directory + "/\(name).port") == 0o600, "named socket")
        #expect(Self.mode(directory + "/\(name).lock") == 0o600, "lock file")
        #expect(Self.mode(try #require(port.address.ipcPath)) == 0o600, "anonymous socket of an .ipc port")
        #expect(Self.isSocket(directory + "/\(name).port"))
    }

    static func mode(_ path: String) -> UInt32? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return UInt32(info.st_mode & 0o777)
    }

    static func isSocket(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFSOCK
    }

    // MARK: - In child processes

    @Test("S-PORT-6: an ipc path over 107 bytes is refused with .pathTooLong before anything is bound")
    func pathTooLong() async {
        await #expect(processExitsWith: .success) {
            let long = "/tmp/rlk-long-" + String(repeating: "d", count: 90)
            mkdir(long, 0o700)
            setenv("RUNLOOPKIT_RUNTIME_DIR", long, 1)
            do throws(PortError) {
                _ = try Port(transport: .ipc)
                exit(1)
            } catch {
                guard case let .pathTooLong(path, limit) = error, limit == 107, path.utf8.count > 107 else { exit(2) }
            }
            let local = try Port(transport: .inproc)
            do throws(PortError) {
                try PortNameServer.register(local, name: "n")
                exit(3)
            } catch {
                guard case .pathTooLong = error else { exit(4) }
            }
            rmdir(long)
        }
    }

    @Test("S-PORT-6: a name left by a process that died holding it is taken over")
    func staleNameTakenOver() async throws {
        let name = Self.uniqueName("stale")
        setenv("RLK_TEST_NAME_STALE", name, 1)
        await #expect(processExitsWith: .success) {
            let name = String(cString: getenv("RLK_TEST_NAME_STALE"))
            let port = try Port(transport: .ipc)
            try PortNameServer.register(port, name: name)
            // Die holding it: _exit skips every clean-up, as a crash would.
            _exit(0)
        }
        let directory = try PortNameServer.directory()
        #expect(access(directory + "/\(name).port", F_OK) == 0, "the dead holder's socket file is still there")
        #expect(throws: PortError.nameNotFound(name)) { _ = try PortNameServer.lookup(name) }
        let port = try Port(transport: .ipc)
        defer { port.invalidate() }
        try PortNameServer.register(port, name: name)
        #expect(try PortNameServer.lookup(name) === port)
    }

    @Test("S-PORT-6, S-PORT-5: a name held by a live child is refused; the parent reaches the child through it; when the child exits, its port becomes invalid within the documented second and sends fail with .peerDied")
    func liveHolderAndPeerDeath() async throws {
        let name = Self.uniqueName("live")
        var template = Array("/tmp/rlk-named-XXXXXX".utf8CString)
        let directory = template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)) }
        setenv("RLK_TEST_NAME_LIVE", name, 1)
        setenv("RLK_TEST_DIR_LIVE", directory, 1)
        async let child = #expect(processExitsWith: .success) {
            let name = String(cString: getenv("RLK_TEST_NAME_LIVE"))
            let directory = String(cString: getenv("RLK_TEST_DIR_LIVE"))
            let port = try Port(transport: .ipc)
            let received = DispatchSemaphore(value: 0)
            port.setMessageHandler { message in
                if message.msgid == 42 { received.signal() }
            }
            let worker = LoopThread(name: "named-child")
            try worker.start()
            try port.schedule(in: worker.runLoop!, forMode: .default)
            try PortNameServer.register(port, name: name)
            close(open(directory + "/ready", O_CREAT | O_WRONLY, 0o600))
            // Exit once the parent's message arrived (or give up after 60 s).
            guard received.wait(timeout: .now() + 60) == .success else { exit(1) }
        }
        #expect(waitUntil(timeout: 60) { access(directory + "/ready", F_OK) == 0 }, "the child never registered")

        let mine = try Port(transport: .ipc)
        defer { mine.invalidate() }
        do {
            try PortNameServer.register(mine, name: name)
            Issue.record("a name held by a live child was registered")
        } catch let error {
            guard case let .nameInUse(held, pid) = error else { Issue.record("expected .nameInUse, got \(error)"); return }
            #expect(held == name && pid != getpid() && pid > 0)
        }
        let remote = try PortNameServer.lookup(name)
        #expect(!remote.isLocal && remote.ownerProcessID != getpid() && remote.isValid)
        let invalidated = DispatchSemaphore(value: 0)
        remote.addInvalidationHandler { _ in invalidated.signal() }
        try remote.send(msgid: 42, before: Date() + 10)
        _ = await child
        // The child has exited: its port becomes invalid within the documented 1 s.
        let start = MonotonicClock.now()
        #expect(invalidated.wait(timeout: .now() + 10) == .success, "the dead child's port never became invalid")
        #expect(MonotonicClock.seconds(MonotonicClock.now() - start) < 1.0, "peer death took longer than the documented second")
        #expect(!remote.isValid)
        #expect(throws: PortError.self) { try remote.send(msgid: 43, before: Date() + 1) }
        do {
            try remote.send(msgid: 43, before: Date() + 1)
        } catch let error {
            guard case .peerDied = error else { Issue.record("expected .peerDied, got \(error)"); return }
        }
        // The name is free again: the kernel released the dead holder's lock.
        try PortNameServer.register(mine, name: name)
    }
}
