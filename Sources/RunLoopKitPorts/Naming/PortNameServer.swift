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
/// every socket file 0600. A released name's files stay until a process
/// sweeps the directory (each process does on its first use of it); a lock
/// file is removed only by a process holding its lock, after checking that
/// the path still names the file it locked, so that a registration opening
/// it meanwhile is never undone. A name whose holder died holding it is
/// answered `.nameHolderDied`, and its files kept, for ten minutes after a
/// process first found the holder dead (docs/ports.md, "Names").
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
        let fd: Int32
        do {
            fd = try NameLock.acquire(paths.lock)
        } catch {
            switch error {
            case let .held(by: holder): throw .nameInUse(name, pid: holder)
            case let .systemCall(failure): throw .systemCall(failure)
            }
        }
        // We hold the name now; a socket file still there was left by a
        // process that died holding it: take it over.
        unlink(paths.socket)
        do {
            try receiver.bindIPC(paths.socket)
        } catch {
            letGo(fd)
            throw error
        }
        let published = PortAddress(
            pid: port.address.pid, startTime: port.address.startTime, portID: port.address.portID,
            route: .ipc(IPCTransport.Endpoint(path: paths.socket, host: HostIdentity.current)))
        let bytes = WireFormat.nameFileContents(for: published)
        // Written whole, then cut to its length: a reader sees the previous
        // bytes, these, or a mix that does not decode, and a mix is never
        // trusted (the lock's holder must be the process it names).
        guard pwrite(fd, bytes, bytes.count, 0) == bytes.count, ftruncate(fd, off_t(bytes.count)) == 0 else {
            let code = errno
            receiver.unbindIPC(paths.socket)
            Self.letGo(fd)
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
    ///   `.nameHolderDied` if the process that held it last has exited
    ///   without letting it go (killed, or exited holding it), for ten
    ///   minutes after a process first found it dead (then `.nameNotFound`),
    ///   `.invalidName`, `.runtimeDirectoryUnsafe`.
    ///
    /// The answer is atomic (S-PORT-9): a send right to the process that
    /// holds the name at the moment of the look, never a half-written entry
    /// nor a previous holder's, however names are registered, released,
    /// taken over or their holders killed meanwhile (docs/ports.md, "Name
    /// files: the protocol").
    public static func lookup(_ name: String, timeout: Duration = .zero) throws(PortError) -> Port {
        try validate(name)
        let deadline: UInt64
        do { deadline = try MonotonicClock.instant(after: timeout, "lookup timeout") } catch { throw .runLoop(error) }
        let paths = try self.paths(for: name)
        var settling = NameLock.SettleWait()
        while true {
            let now = MonotonicClock.now()
            switch NameLock.inspect(paths.lock) {
            case let .held(address):
                let port = Port.resolve(address)
                port.noteLookedUp(as: name)
                return port
            case .settling:
                // A registration half done (or a sweep, or a holder dying):
                // settles in microseconds, so it is waited for even past a
                // zero timeout, as long as `NameLock.SettleWait` allows.
                if settling.mayLookAgain(now: now) || now < deadline {
                    usleep(200)
                    continue
                }
                throw .nameNotFound(name)
            case let .free(diedHolder):
                settling.reset()
                guard now < deadline else {
                    if let diedHolder { throw .nameHolderDied(name, pid: diedHolder) }
                    throw .nameNotFound(name)
                }
                usleep(2_000)
            }
        }
    }

    /// Releases `name` if this process registered it; the port stays valid.
    public static func unregister(_ name: String) {
        guard let registration = table.remove(name) else { return }
        registration.port?.receiver?.unbindIPC(registration.socketPath)
        registration.port?.didUnregister(name)
        letGo(registration.lockDescriptor)
    }

    /// The directory names live in.
    public static func directory() throws(PortError) -> String { try RuntimeDirectory.path() }

    // MARK: - Internals

    /// Called by an invalidated or deinitialised port for each of its names.
    static func release(_ name: String) {
        guard let registration = table.remove(name) else { return }
        letGo(registration.lockDescriptor)
    }

    /// Lets a held name go: the file is emptied first, so that it never
    /// names a live process that no longer holds it (docs/ports.md, "Name
    /// files: the protocol"), then closing the file drops the lock.
    private static func letGo(_ lockDescriptor: Int32) {
        ftruncate(lockDescriptor, 0)
        close(lockDescriptor)
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
        func port(named name: String) -> Port? { entries.withLock { $0[name]?.port } }
    }

    static let table = Table()
}
