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
    static var current: HostIdentity? { cached.withLock { cached in
        if let cached { return cached }
        cached = try? load()
        return cached
    } }

    private static let cached = Locked<HostIdentity?>(nil)
    static let fileName = "host-id"
    static let byteCount = 16

    var description: String { String(high, radix: 16) + String(low, radix: 16) }

    /// Reads the id, or makes it: written to a private temporary file and
    /// linked into place, so that a reader never sees half an id and two
    /// processes making it at once agree on the one that was linked first.
    private static func load() throws(PortError) -> HostIdentity {
        let path = try RuntimeDirectory.path() + "/" + fileName
        if let existing = read(path) { return existing }
        var random = SystemRandomNumberGenerator()
        let bytes = withUnsafeBytes(of: (random.next(), random.next()) as (UInt64, UInt64)) { Array($0) }
        let temporary = path + ".\(getpid()).tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .systemCall(.last("open(\(temporary))")) }
        let written = write(fd, bytes, bytes.count)
        close(fd)
        defer { unlink(temporary) }
        guard written == bytes.count else { throw .systemCall(.last("write(\(temporary))")) }
        // link fails with EEXIST if another process won: read its id.
        if link(temporary, path) != 0 && errno != EEXIST { throw .systemCall(.last("link(\(path))")) }
        guard let id = read(path) else { throw .systemCall(SystemCallError(call: "read(\(path))", errno: EIO)) }
        return id
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
