// The network's keys (S-NET-2): where a process's key pair lives, how it is
// made once without a race, the modes it must have, and the
// authorized-keys file read again when it changes.
import Glibc
import RunLoopKit
import ZeroMQ
@_spi(RunLoopKitInternals) @testable import RunLoopKitCore
@testable import RunLoopKitPorts
@_spi(RunLoopKitInternals) import RunLoopKitTestSupport
import Testing

@Suite("The network's keys (S-NET-2)", .blocksThreads)
struct NetworkKeysTests {
    static func mode(_ path: String) -> mode_t {
        var info = stat()
        stat(path, &info)
        return info.st_mode & 0o777
    }

    static func error(_ body: () throws(PortError) -> Void) -> PortError? {
        do { try body() } catch { return error }
        return nil
    }

    static func write(_ path: String, _ text: String, mode: mode_t) {
        unlink(path)
        let fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, mode)
        let bytes = Array(text.utf8)
        _ = Glibc.write(fd, bytes, bytes.count)
        fchmod(fd, mode)
        close(fd)
    }

    @Test("S-NET-2: the first use makes the secret key 0600 and its public key beside it; a second load reads the same key")
    func firstUseMakesTheKey() throws {
        let directory = makeTemporaryDirectory("rlk-keys")
        defer { PortProcess.removeTree(directory) }
        let made = try NetworkKeys.loadOrMake(in: directory)
        #expect(Self.mode(directory + "/curve.key") == 0o600)
        #expect(SpawnedProgram.read(directory + "/curve.pub") == made.publicKey.z85 + "\n")
        #expect(try NetworkKeys.loadOrMake(in: directory) == made)
        #expect(try CurveKeyPair(secretKey: CurveKey(z85: String(SpawnedProgram.read(directory + "/curve.key").dropLast()))) == made)
    }

    @Test("S-NET-2: eight threads making the key at once in a fresh directory end up with one key")
    func racingMakersAgree() throws {
        let directory = makeTemporaryDirectory("rlk-keys")
        defer { PortProcess.removeTree(directory) }
        let results = Locked<[CurveKeyPair]>([])
        let threads = (0..<8).map { _ in
            SpawnedThread { if let pair = try? NetworkKeys.loadOrMake(in: directory) { results.withLock { $0.append(pair) } } }
        }
        for thread in threads { try thread.join() }
        let keys = results.withLock { $0 }
        #expect(keys.count == 8)
        #expect(Set(keys.map(\.secretKey)).count == 1)
        #expect(PortProcess.directoryEntries(directory) == ["curve.key", "curve.pub"], "no temporary file left")
    }

    @Test("S-NET-2: a key file or directory open to others, a key file of garbage, and a missing key file are refused, each error naming the file and what to do")
    func looseModesAndBadFilesAreRefused() throws {
        let directory = makeTemporaryDirectory("rlk-keys")
        defer { PortProcess.removeTree(directory) }
        let key = directory + "/curve.key"
        Self.write(key, try CurveKeyPair.generate().secretKey.z85 + "\n", mode: 0o644)
        let loose = Self.error { () throws(PortError) in _ = try NetworkKeys.read(key) }
        #expect(loose?.caseName == "keyFile")
        #expect(loose.map { "\($0)".contains(key) && "\($0)".contains("chmod 600") } == true, "\(String(describing: loose))")
        Self.write(key, "not a key\n", mode: 0o600)
        #expect(Self.error { () throws(PortError) in _ = try NetworkKeys.read(key) }.map { "\($0)".contains("does not hold a secret key") } == true)
        #expect(Self.error { () throws(PortError) in _ = try NetworkKeys.read(directory + "/missing.key") }.map { "\($0)".contains("does not exist") } == true)
        chmod(directory, 0o755)
        let open = Self.error { () throws(PortError) in try NetworkKeys.check(directory, directory: true) }
        #expect(open.map { "\($0)".contains(directory) && "\($0)".contains("chmod 700") } == true, "\(String(describing: open))")
    }

    @Test("S-NET-2: the authorized-keys file: listed keys in, others out, comments and blank lines ignored, a bad line skipped; this process's own key always in")
    func authorizedKeysFile() throws {
        let directory = makeTemporaryDirectory("rlk-keys")
        defer { PortProcess.removeTree(directory) }
        let (own, listed, other) = (try CurveKeyPair.generate(), try CurveKeyPair.generate(), try CurveKeyPair.generate())
        let path = directory + "/authorized_keys"
        Self.write(path, "# hosts\n\n  \(listed.publicKey.z85) host-b\nnot-a-key here\n", mode: 0o644)
        let authorized = AuthorizedKeys(path: path, ownKey: own.publicKey)
        #expect(authorized.allows(listed.publicKey))
        #expect(authorized.allows(own.publicKey))
        #expect(!authorized.allows(other.publicKey))
        #expect(authorized.keys == [own.publicKey, listed.publicKey])
    }

    @Test("S-NET-2: a key added or removed is noticed without a restart (a rewrite or a rename), and refresh names the revoked keys; a file others may write, or none, lets in only this process's own key")
    func authorizedKeysChange() throws {
        let directory = makeTemporaryDirectory("rlk-keys")
        defer { PortProcess.removeTree(directory) }
        let (own, first, second) = (try CurveKeyPair.generate(), try CurveKeyPair.generate(), try CurveKeyPair.generate())
        let path = directory + "/authorized_keys"
        let authorized = AuthorizedKeys(path: path, ownKey: own.publicKey)
        #expect(authorized.keys == [own.publicKey], "no file: this process's own key alone")
        Self.write(path, first.publicKey.z85 + "\n", mode: 0o644)
        #expect(authorized.refresh().isEmpty)
        #expect(authorized.allows(first.publicKey))
        // Replaced by rename, as an editor or a deployment tool does.
        Self.write(path + ".new", second.publicKey.z85 + " b\n", mode: 0o644)
        rename(path + ".new", path)
        #expect(authorized.refresh() == [first.publicKey])
        #expect(!authorized.allows(first.publicKey) && authorized.allows(second.publicKey))
        #expect(authorized.refresh().isEmpty, "unchanged: nothing revoked")
        chmod(path, 0o666)
        #expect(authorized.refresh() == [second.publicKey], "a file others may write is refused")
        #expect(authorized.keys == [own.publicKey])
    }
}
