import Glibc
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// This process's long-term CURVE key pair for tcp (S-NET-2), and the file
/// of the clients its listeners accept (docs/ports.md, "Keys across
/// machines").
///
/// The keys live in the user's configuration directory,
/// `$XDG_CONFIG_HOME/runloopkit` (else `~/.config/runloopkit`), never in the
/// runtime directory, which is emptied at logout: `curve.key` holds the
/// secret key (its 40 characters of Z85 and a newline, mode 0600), made on
/// first use; `curve.pub` beside it the public key, to copy into other
/// hosts' `authorized_keys`. The directory must be 0700 and the secret key
/// 0600, both this user's: anything looser is refused with an error that
/// names the file and says what to run.
///
/// `RUNLOOPKIT_KEY_FILE` (or `useKeyFile(at:)`) points at another secret key
/// file (a program's own), and `RUNLOOPKIT_AUTHORIZED_KEYS` (or
/// `useAuthorizedKeysFile(at:)`) at another authorized-keys file.
public enum NetworkKeys {
    private struct State {
        var keyFile: String?
        var authorizedKeysFile: String?
        var keyPair: CurveKeyPair?
    }

    private static let state = Locked(State())
    static let secretKeyName = "curve.key"
    static let publicKeyName = "curve.pub"
    static let authorizedKeysName = "authorized_keys"

    /// The configuration directory (made 0700 if missing; refused if looser).
    public static var directory: String {
        get throws(PortError) {
            let base: String
            if let xdg = environment("XDG_CONFIG_HOME") {
                base = xdg
            } else if let home = environment("HOME") {
                base = home + "/.config"
                if mkdir(base, 0o700) != 0 && errno != EEXIST {
                    throw .keyFile(path: base, reason: "cannot make it: \(String(cString: strerror(errno)))")
                }
            } else {
                throw .keyFile(path: "~/.config/runloopkit", reason: "neither XDG_CONFIG_HOME nor HOME is set")
            }
            let path = base + "/runloopkit"
            if mkdir(path, 0o700) != 0 && errno != EEXIST {
                throw .keyFile(path: path, reason: "cannot make the directory: \(String(cString: strerror(errno)))")
            }
            try check(path, directory: true)
            return path
        }
    }

    /// This process's key pair: loaded (or made, the first time on this
    /// host for this user) on first use, and kept.
    public static func keyPair() throws(PortError) -> CurveKeyPair {
        if let known = state.withLock({ $0.keyPair }) { return known }
        let loaded: CurveKeyPair
        if let file = state.withLock({ $0.keyFile }) ?? environment("RUNLOOPKIT_KEY_FILE") {
            loaded = try read(file)
        } else {
            loaded = try loadOrMake(in: try directory)
        }
        return state.withLock { state in
            if state.keyPair == nil { state.keyPair = loaded }
            return state.keyPair!
        }
    }

    /// The public key's Z85 text: what to add to other hosts' authorized-keys files.
    public static var publicKeyText: String {
        get throws(PortError) { try keyPair().publicKey.z85 }
    }

    /// Uses the secret key in `path` (same format and modes as `curve.key`;
    /// never made) instead of the user's: checked and loaded now.
    /// - Precondition: called before this process first used its key (its
    ///   first tcp port or connection): a process has one key.
    public static func useKeyFile(at path: String) throws(PortError) {
        let pair = try read(path)
        state.withLock { state in
            precondition(state.keyPair == nil || state.keyFile == path,
                         "RunLoopKit: NetworkKeys.useKeyFile(at:) after this process's key was in use; call it before making any tcp port")
            state.keyFile = path
            state.keyPair = pair
        }
    }

    /// Uses `path` as the authorized-keys file of this process's listeners.
    /// - Precondition: called before the first listener.
    public static func useAuthorizedKeysFile(at path: String) {
        state.withLock { $0.authorizedKeysFile = path }
    }

    /// The authorized-keys file listeners use.
    static func authorizedKeysPath() throws(PortError) -> String {
        if let chosen = state.withLock({ $0.authorizedKeysFile }) ?? environment("RUNLOOPKIT_AUTHORIZED_KEYS") { return chosen }
        return try directory + "/" + authorizedKeysName
    }

    // MARK: - Files

    /// Reads `curve.key` in `directory`, or makes it: written to a private
    /// temporary file and linked into place, so that two processes starting
    /// at once end up with the one linked first.
    static func loadOrMake(in directory: String) throws(PortError) -> CurveKeyPair {
        let path = directory + "/" + secretKeyName
        if access(path, F_OK) != 0 {
            let made: CurveKeyPair
            do { made = try CurveKeyPair.generate() } catch { throw .zeroMQ(error) }
            let temporary = path + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp"
            try writeFile(temporary, Array((made.secretKey.z85 + "\n").utf8), mode: 0o600)
            defer { unlink(temporary) }
            if link(temporary, path) != 0 && errno != EEXIST {
                throw .keyFile(path: path, reason: "cannot link it into place: \(String(cString: strerror(errno)))")
            }
        }
        let pair = try read(path)
        writePublicKey(pair.publicKey, next: path)
        return pair
    }

    /// Reads a secret key file, checking its owner and mode.
    static func read(_ path: String) throws(PortError) -> CurveKeyPair {
        try check(path, directory: false)
        let text = try readText(path)
        let line = text.split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        do {
            return try CurveKeyPair(secretKey: CurveKey(z85: line.filter { !$0.isWhitespace }))
        } catch {
            throw .keyFile(path: path, reason: "it does not hold a secret key (one line of 40 Z85 characters)")
        }
    }

    /// `curve.pub` beside the secret key, when missing or stale: public, for copying.
    private static func writePublicKey(_ key: CurveKey, next secretPath: String) {
        let path = String(secretPath.dropLast(secretKeyName.count)) + publicKeyName
        let text = key.z85 + "\n"
        if (try? readText(path)) == text { return }
        let temporary = path + ".\(getpid()).tmp"
        guard (try? writeFile(temporary, Array(text.utf8), mode: 0o644)) != nil else { return }
        if rename(temporary, path) != 0 { unlink(temporary) }
    }

    /// The owner must be this user, and no group or other bit set.
    static func check(_ path: String, directory: Bool) throws(PortError) {
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw .keyFile(path: path, reason: errno == ENOENT ? "it does not exist" : String(cString: strerror(errno)))
        }
        guard (info.st_mode & S_IFMT == S_IFDIR) == directory else {
            throw .keyFile(path: path, reason: directory ? "not a directory" : "not a regular file")
        }
        guard info.st_uid == getuid() else {
            throw .keyFile(path: path, reason: "owned by uid \(info.st_uid), not by this user (\(getuid()))")
        }
        let mode = info.st_mode & 0o777
        guard mode & 0o077 == 0 else {
            throw .keyFile(path: path, reason: "mode \(String(mode, radix: 8)) lets others in; run: chmod \(directory ? "700" : "600") \(path)")
        }
    }

    static func readText(_ path: String) throws(PortError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .keyFile(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = Glibc.read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            bytes += buffer[..<count]
            if bytes.count > 1 << 20 { throw .keyFile(path: path, reason: "over 1 MiB") }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func writeFile(_ path: String, _ bytes: [UInt8], mode: mode_t) throws(PortError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw .keyFile(path: path, reason: "cannot create it: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        _ = fchmod(fd, mode)  // whatever the umask
        guard Glibc.write(fd, bytes, bytes.count) == bytes.count, fsync(fd) == 0 else {
            throw .keyFile(path: path, reason: "cannot write it: \(String(cString: strerror(errno)))")
        }
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name), value.pointee != 0 else { return nil }
        return String(cString: value)
    }
}
