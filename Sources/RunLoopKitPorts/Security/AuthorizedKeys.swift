import Glibc
import Logging
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The clients a listener accepts (S-NET-2): the CURVE public keys its
/// authorized-keys file lists, read again when the file changes, so that a
/// key is added or revoked without a restart (the network thread closes a
/// revoked key's connections).
///
/// Format (docs/ports.md, "Keys across machines"): one key per line, its 40
/// characters of Z85, optionally followed by whitespace and a comment (a
/// host's name); blank lines and lines starting with `#` are ignored; a
/// line that is not a key is logged (file and line) and skipped. The file
/// must be this user's and not writable by group or others, else it is
/// refused and no client is accepted (logged). With no file, no client is
/// accepted but this process's own key: processes of one user on one host
/// (which share the key) talk over tcp with no set-up.
final class AuthorizedKeys: @unchecked Sendable {
    let path: String
    private let ownKey: CurveKey?
    private struct State {
        var keys: Set<CurveKey> = []
        /// What the file was when last read (device, inode, size, mtime
        /// in ns); nil when missing or refused.
        var stamp: [Int64]?
        var read = false
        /// Keys revoked by a change not yet taken (`takeRevoked`): a
        /// handshake's refresh may be the one that sees the change.
        var revokedUntaken: Set<CurveKey> = []
    }
    private let state = Locked(State())
    private static let logger = Logger(label: "RunLoopKit.Network")

    init(path: String, ownKey: CurveKey? = try? NetworkKeys.keyPair().publicKey) {
        self.path = path
        self.ownKey = ownKey
        _ = refresh()
    }

    /// The keys allowed now (own key included).
    var keys: Set<CurveKey> { state.withLock { $0.keys } }

    /// Whether a client with `key` may connect.
    func allows(_ key: CurveKey) -> Bool { state.withLock { $0.keys.contains(key) } }

    /// Reads the file again if it changed (another inode, size or mtime: a
    /// file replaced by rename counts); returns the keys allowed before and
    /// not now.
    func refresh() -> Set<CurveKey> {
        let stamp = Self.stamp(path)
        let unchanged = state.withLock { $0.read && $0.stamp == stamp }
        if unchanged { return [] }
        let keys = load(stamp: stamp)
        return state.withLock { state in
            let revoked = state.keys.subtracting(keys)
            state.keys = keys
            state.stamp = stamp
            state.read = true
            state.revokedUntaken.formUnion(revoked)
            state.revokedUntaken.subtract(keys)
            return revoked
        }
    }

    /// The keys revoked since the last call, whichever refresh saw the
    /// change: whoever closes revoked keys' connections takes them here.
    func takeRevoked() -> Set<CurveKey> {
        state.withLock { state in
            defer { state.revokedUntaken.removeAll() }
            return state.revokedUntaken
        }
    }

    private func load(stamp: [Int64]?) -> Set<CurveKey> {
        var keys: Set<CurveKey> = ownKey.map { [$0] } ?? []
        guard stamp != nil else { return keys }  // no file: this process's key alone
        do {
            try Self.checkNotWritableByOthers(path)
            let text = try NetworkKeys.readText(path)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                let trimmed = line.drop { $0 == " " || $0 == "\t" }
                guard !trimmed.isEmpty, !trimmed.hasPrefix("#") else { continue }
                let word = String(trimmed.prefix { $0 != " " && $0 != "\t" && $0 != "\r" })
                guard let key = try? CurveKey(z85: word) else {
                    Self.logger.warning("\(path):\(number + 1): not a CURVE public key (40 characters of Z85), skipped")
                    continue
                }
                keys.insert(key)
            }
        } catch {
            Self.logger.error("tcp: \(error); no client is accepted until it is fixed")
            return ownKey.map { [$0] } ?? []
        }
        return keys
    }

    private static func checkNotWritableByOthers(_ path: String) throws(PortError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .keyFile(path: path, reason: String(cString: strerror(errno))) }
        guard info.st_uid == getuid() else {
            throw .keyFile(path: path, reason: "owned by uid \(info.st_uid), not by this user (\(getuid()))")
        }
        guard info.st_mode & 0o022 == 0 else {
            throw .keyFile(path: path, reason: "mode \(String(info.st_mode & 0o777, radix: 8)) lets others write it; run: chmod 644 \(path)")
        }
    }

    private static func stamp(_ path: String) -> [Int64]? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return [Int64(info.st_dev), Int64(info.st_ino), Int64(info.st_size),
                Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec), Int64(info.st_mode)]
    }
}
