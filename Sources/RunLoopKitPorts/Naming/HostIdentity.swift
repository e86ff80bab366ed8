import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Which host an ipc port lives on (S-PORT-8): a random 128-bit id kept in
/// the per-user runtime directory (`host-id`, mode 0600), made by the first
/// process that needs it and read by every later one. An ipc descriptor
/// carries its host's id, so that a receiver on another host (another
/// machine, another network namespace with its own runtime directory) knows
/// at once that the path in it leads nowhere it can reach.
struct HostIdentity: Hashable, Sendable, CustomStringConvertible {
    let high: UInt64
    let low: UInt64

    /// This host's id, or nil if the runtime directory cannot be used (then
    /// no ipc port can be made here either).
    static var current: HostIdentity? {
        if let id = state.withLock({ $0.id }) { return id }
        // Loaded with no lock held: loading uses the runtime directory,
        // whose first use calls `reconcile`, which takes the lock.
        let loaded = try? load()
        return state.withLock { state in
            if state.id == nil { state.id = loaded }
            return state.id
        }
    }

    /// Whether `id` names this host: its id now, or one this process used
    /// before its runtime directory was replaced (see `reconcile`).
    static func isThisHost(_ id: HostIdentity) -> Bool {
        state.withLock { $0.id == id || $0.former.contains(id) }
    }

    private struct State {
        var id: HostIdentity?
        /// Ids this process used before adopting another (`reconcile`).
        var former: Set<HostIdentity> = []
    }

    private static let state = Locked(State())
    static let fileName = "host-id"
    static let byteCount = 16

    var description: String { String(high, radix: 16) + String(low, radix: 16) }

    /// Called when this process finds its runtime directory replaced (removed
    /// and made again, by it or by another process; docs/ports.md, "When
    /// the runtime directory changes under a live process"). The id is the
    /// host's, not the directory's, so it must survive: if the new
    /// directory has no id yet, this process writes back the one it has;
    /// if a process started since made a new one, this process adopts it
    /// and keeps accepting its old one. Either way processes started
    /// before and after agree from then on.
    static func reconcile(in directory: String) {
        state.withLock { state in
            guard let mine = state.id else { return }  // none yet: the first use reads the file
            let path = directory + "/" + fileName
            if let there = read(path) {
                guard there != mine else { return }
                state.former.insert(mine)
                state.id = there
                return
            }
            if let written = try? write(mine, to: path), written != mine {
                // Another process linked its id first: adopt it.
                state.former.insert(mine)
                state.id = written
            }
        }
    }

    /// Reads the id, or makes it: written to a private temporary file and
    /// linked into place, so that a reader never sees half an id and two
    /// processes making it at once agree on the one that was linked first.
    private static func load() throws(PortError) -> HostIdentity {
        let path = try RuntimeDirectory.path() + "/" + fileName
        if let existing = read(path) { return existing }
        var random = SystemRandomNumberGenerator()
        return try write(HostIdentity(high: random.next(), low: random.next()), to: path)
    }

    /// Links `id` into place at `path` unless an id is there already;
    /// returns the id that is there then (ours, or the one linked first).
    private static func write(_ id: HostIdentity, to path: String) throws(PortError) -> HostIdentity {
        let bytes = withUnsafeBytes(of: (id.high.littleEndian, id.low.littleEndian)) { Array($0) }
        let temporary = path + ".\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .systemCall(.last("open(\(temporary))")) }
        let written = Glibc.write(fd, bytes, bytes.count)
        close(fd)
        defer { unlink(temporary) }
        guard written == bytes.count else { throw .systemCall(.last("write(\(temporary))")) }
        // link fails with EEXIST if another process won: read its id.
        if link(temporary, path) != 0 && errno != EEXIST { throw .systemCall(.last("link(\(path))")) }
        guard let there = read(path) else { throw .systemCall(SystemCallError(call: "read(\(path))", errno: EIO)) }
        return there
    }

    private static func read(_ path: String) -> HostIdentity? {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var bytes = [UInt8](repeating: 0, count: byteCount)
        guard Glibc.read(fd, &bytes, bytes.count) == bytes.count else { return nil }
        return bytes.withUnsafeBytes { raw in
            HostIdentity(high: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 0, as: UInt64.self)),
                         low: UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }
}
