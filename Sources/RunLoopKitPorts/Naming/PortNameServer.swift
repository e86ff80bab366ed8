import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Names for ports, shared by the processes of one user (NSPortNameServer,
/// S-PORT-6). A name is a socket file, `<name>.port`, in the per-user
/// runtime directory, guarded by a lock file, `<name>.lock`, that the holding
/// process keeps locked (flock) while the name is registered.
///
/// ```swift
/// // server
/// let port = try Port(transport: .ipc)
/// try PortNameServer.register(port, name: "com.example.echo")
/// // client, in another process of the same user
/// let server = try PortNameServer.lookup("com.example.echo")
/// ```
///
/// Because the kernel drops a dead process's flock, a live holder is told
/// apart from a stale name with no guesswork: registering a name held by a
/// live process fails with `.nameInUse`; a name left by a dead process is
/// taken over. Names are 1 to 64 characters of `A-Z a-z 0-9 . _ -`, starting
/// with a letter or digit (no path tricks). The directory is mode 0700 and
/// every socket file 0600. Lock files stay in the directory after use (they
/// are empty of meaning once unlocked; removing them would race with a
/// process opening them).
public enum PortNameServer {
    /// Registers a local port under `name` for the processes of this user.
    /// The name lasts until `unregister(_:)`, the port's invalidation, or the
    /// process's exit.
    ///
    /// A name is how other processes reach a port, so registering makes the
    /// port reachable through the name's socket whatever its transport: an
    /// `.inproc` port registered under a name receives from other processes
    /// through that name (and only through it: its own descriptor, sent in a
    /// message, still names no socket, so sending it to another process is
    /// refused with `.componentNotTransferable`). `unregister` ends that.
    /// - Throws: `.invalidName`, `.nameInUse` (a live process holds it, or
    ///   this one), `.notLocal`, `.invalidPort`, `.pathTooLong`,
    ///   `.runtimeDirectoryUnsafe`.
    public static func register(_ port: Port, name: String) throws(PortError) {
        try validate(name)
        guard let receiver = port.receiver else { throw .notLocal(port.description) }
        guard port.isValid else { throw port.invalidError() }
        let paths = try self.paths(for: name)
        let fd = open(paths.lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { throw .systemCall(.last("open(\(paths.lock))")) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? readRegistration(fd))?.pid ?? 0
            close(fd)
            throw .nameInUse(name, pid: holder)
        }
        // We hold the name now; a socket file still there was left by a
        // process that died holding it: take it over.
        unlink(paths.socket)
        do {
            try receiver.bindIPC(paths.socket)
        } catch {
            close(fd)
            throw error
        }
        let published = PortAddress(pid: port.address.pid, startTime: port.address.startTime,
                                    portID: port.address.portID, ipcPath: paths.socket, hostID: HostIdentity.current)
        let bytes = WireFormat.nameFileContents(for: published)
        guard ftruncate(fd, 0) == 0, pwrite(fd, bytes, bytes.count, 0) == bytes.count else {
            let code = errno
            receiver.unbindIPC(paths.socket)
            close(fd)
            throw .systemCall(SystemCallError(call: "write(\(paths.lock))", errno: code))
        }
        table.add(name, Registration(lockDescriptor: fd, socketPath: paths.socket, port: port))
        port.didRegister(name)
    }

    /// A send right to the port registered under `name`.
    /// - Parameters:
    ///   - name: the name a process registered.
    ///   - timeout: how long to wait for the name to appear (a
    ///     server still starting); 0 looks once.
    /// - Throws: `.nameNotFound` if no live process holds the name by then,
    ///   `.invalidName`, `.runtimeDirectoryUnsafe`.
    public static func lookup(_ name: String, timeout: Duration = .zero) throws(PortError) -> Port {
        try validate(name)
        let deadline: UInt64
        do { deadline = try MonotonicClock.instant(after: timeout, "lookup timeout") } catch { throw .runLoop(error) }
        let paths = try self.paths(for: name)
        while true {
            if let address = try lookOnce(paths) {
                let port = Port.resolve(address)
                port.noteLookedUp(as: name)
                return port
            }
            guard MonotonicClock.now() < deadline else { throw .nameNotFound(name) }
            usleep(2_000)
        }
    }

    /// Releases `name` if this process registered it; the port stays valid.
    public static func unregister(_ name: String) {
        guard let registration = table.remove(name) else { return }
        registration.port?.receiver?.unbindIPC(registration.socketPath)
        registration.port?.didUnregister(name)
        close(registration.lockDescriptor)
    }

    /// The directory names live in.
    public static func directory() throws(PortError) -> String { try RuntimeDirectory.path() }

    // MARK: - Internals

    /// Called by an invalidated or deinitialised port for each of its names.
    static func release(_ name: String) {
        guard let registration = table.remove(name) else { return }
        close(registration.lockDescriptor)
    }

    private static func lookOnce(_ paths: (socket: String, lock: String)) throws(PortError) -> PortAddress? {
        let fd = open(paths.lock, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            // Nobody holds it: a stale or released name.
            flock(fd, LOCK_UN)
            return nil
        }
        // Held: the holder may still be writing its descriptor; then not yet.
        return try? readRegistration(fd)
    }

    private static func readRegistration(_ fd: Int32) throws -> PortAddress {
        var buffer = [UInt8](repeating: 0, count: WireFormat.maxNameFileBytes)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { throw PortError.nameNotFound("") }
        return try buffer.withUnsafeBytes { bytes in
            try WireFormat.decodeNameFile(UnsafeRawBufferPointer(rebasing: bytes[..<count]))
        }
    }

    static func validate(_ name: String) throws(PortError) {
        let bytes = Array(name.utf8)
        guard !bytes.isEmpty, bytes.count <= 64 else { throw .invalidName(name, reason: "a name has 1 to 64 characters") }
        func allowed(_ byte: UInt8) -> Bool {
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
                || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
        guard bytes.allSatisfy(allowed) else {
            throw .invalidName(name, reason: "only A-Z, a-z, 0-9, '.', '_' and '-' are allowed (no '/', spaces or control characters)")
        }
        guard allowed(bytes[0]), bytes[0] != UInt8(ascii: "."), bytes[0] != UInt8(ascii: "_"), bytes[0] != UInt8(ascii: "-") else {
            throw .invalidName(name, reason: "a name starts with a letter or a digit")
        }
    }

    private static func paths(for name: String) throws(PortError) -> (socket: String, lock: String) {
        let directory = try RuntimeDirectory.path()
        let socket = "\(directory)/\(name).port"
        guard socket.utf8.count <= WireFormat.maxIPCPathBytes else {
            throw .pathTooLong(socket, limit: WireFormat.maxIPCPathBytes)
        }
        return (socket, "\(directory)/\(name).lock")
    }

    // MARK: - This process's names

    struct Registration {
        let lockDescriptor: Int32
        let socketPath: String
        weak var port: Port?
    }

    final class Table: Sendable {
        private let entries = Locked<[String: Registration]>([:])

        func add(_ name: String, _ registration: Registration) { entries.withLock { $0[name] = registration } }
        func remove(_ name: String) -> Registration? { entries.withLock { $0.removeValue(forKey: name) } }
    }

    static let table = Table()
}
