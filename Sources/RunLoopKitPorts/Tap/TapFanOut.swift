internal import CLinuxSupport
import Glibc
import ZeroMQ
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The writer's side of the tap's readers (`PortTapReader` is a reader's
/// own side): the sniffers a tapped process reports to by default, one socket each
/// (S-TAP-1's several readers): every sniffer binds a socket of its own in
/// the readers' directory (`<runtime directory>/tap/<pid>.sock`), and the
/// tap connects a PUSH socket to each one it finds there and sends every
/// event to each, as two tcpdumps on one interface both see everything. A
/// reader that falls behind by more than the tap holds for it (`TapOutlet`)
/// misses events (gaps in their numbers) without touching the others; one
/// that comes or goes changes nothing for the rest.
///
/// The directory is watched with inotify from the tap's loop thread, so a
/// sniffer started later is connected at once, and nothing wakes the
/// thread while no sniffer comes or goes. The socket files of sniffers
/// that died without removing theirs are removed (their pid is gone).
///
/// Threading: the tap thread's (its drains and its directory watch), and
/// the last drain at exit, which `TapPipeline`'s drain lock serialises;
/// `refresh()` at start runs before the tap thread sees it.
final class TapFanOut: @unchecked Sendable {
    // @unchecked Sendable: every use but `init` holds `TapPipeline`'s drain
    // lock (the tap thread's drains and directory changes, the exit's drain).
    let directory: String
    private let context: ZMQContext
    private let lingerMilliseconds: Int32
    /// Socket file path -> the PUSH socket connected to it, and the names
    /// sent on it.
    private(set) var outlets: [String: TapOutlet] = [:]
    private var watch: Int32 = -1

    /// The readers' directory, made (mode 0700, inside the runtime
    /// directory) if need be.
    static func directoryPath() throws(PortError) -> String {
        let path = try RuntimeDirectory.path() + "/tap"
        if mkdir(path, 0o700) != 0 && errno != EEXIST {
            throw .runtimeDirectoryUnsafe(path: path, reason: "mkdir failed: \(String(cString: strerror(errno)))")
        }
        return path
    }

    init(directory: String, context: ZMQContext, lingerMilliseconds: Int32) {
        self.directory = directory
        self.context = context
        self.lingerMilliseconds = lingerMilliseconds
    }

    /// Starts watching the directory; returns the inotify fd for the tap
    /// loop to listen to (nil if inotify refused: the readers present now
    /// are still served, later ones are found at the next refresh).
    func startWatching() -> Int32? {
        let fd = inotify_init1(Int32(IN_NONBLOCK | IN_CLOEXEC))
        guard fd >= 0 else { return nil }
        let mask = UInt32(IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM)
        guard inotify_add_watch(fd, directory, mask) >= 0 else {
            close(fd)
            return nil
        }
        watch = fd
        return fd
    }

    /// The directory changed: reads inotify's notes (what they say is
    /// read again from the directory itself) and refreshes. Returns the
    /// events dropped with readers that went (`refresh()`).
    func directoryChanged() -> Int {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while watch >= 0 && read(watch, &buffer, buffer.count) > 0 {}
        return refresh()
    }

    /// Connects to every reader socket in the directory not yet connected,
    /// and closes the sockets of readers whose file is gone; returns the
    /// events held for those (not yet sent), dropped with them.
    func refresh() -> Int {
        var present: [String: pid_t?] = [:]
        if let handle = opendir(directory) {
            defer { closedir(handle) }
            while let entry = readdir(handle) {
                let name = withUnsafePointer(to: &entry.pointee.d_name) {
                    $0.withMemoryRebound(to: CChar.self, capacity: 1) { String(cString: $0) }
                }
                guard name.hasSuffix(".sock") else { continue }
                let path = directory + "/" + name
                // A sniffer that died without removing its socket: its pid is gone.
                let pid = Int32(name.dropLast(".sock".count).prefix { $0 != "-" })
                if let pid, kill(pid, 0) != 0 && errno == ESRCH {
                    unlink(path)
                    continue
                }
                present.updateValue(pid, forKey: path)
            }
        }
        var dropped = 0
        for (path, outlet) in outlets where present[path] == nil {
            dropped += outlet.dropHeld()
            outlet.socket.close()
            outlets[path] = nil
        }
        for (path, pid) in present where outlets[path] == nil {
            guard let socket = try? connect(to: "ipc://" + path) else { continue }
            // Not waited for: its records are held until its handshake is
            // done (TapOutlet). A new reader is sent every name before its
            // first records.
            outlets[path] = TapOutlet(socket, readerPID: pid)
        }
        return dropped
    }

    private func connect(to endpoint: String) throws(ZMQError) -> Socket {
        let push = try context.makeSocket(.push)
        try TapPipeline.configure(push, lingerMilliseconds: lingerMilliseconds)
        try push.connect(endpoint)
        push.releaseOwnership()
        return push
    }

    /// At exit, or when the tap stops: closes every socket (with `linger`)
    /// and the watch.
    func closeAll(lingerMilliseconds linger: Int32) {
        for outlet in outlets.values { outlet.close(lingerMilliseconds: linger) }
        outlets.removeAll()
        if watch >= 0 { close(watch) }
        watch = -1
    }
}
