/// The ports this process knows, so that a descriptor always resolves to
/// the same object: a local port comes back as itself (S-PORT-3), and every
/// send right to one remote port shares one Port, one channel and one watch
/// on its process.
import Glibc

final class PortRegistry: @unchecked Sendable {
    // @unchecked Sendable: everything is guarded by `lock`.
    static let shared = PortRegistry()

    private struct WeakPort {
        weak var port: Port?
    }

    private let lock = Lock()
    // Guarded by lock: local ports by port id.
    private var local: [UInt64: WeakPort] = [:]
    // Guarded by lock: send rights to other processes' ports.
    private var remote: [PortAddress: WeakPort] = [:]
    // Guarded by lock: the most recently resolved send rights, kept alive so
    // that a reply port dropped after each reply does not close and reopen
    // its ipc connection every time.
    private var recent: [Port?] = Array(repeating: nil, count: 64)
    private var recentNext = 0

    // Guarded by lock.
    private var atExitInstalled = false

    /// Makes sure that at process exit every local port still open has its
    /// ipc socket files removed.
    func cleanUpAtExit() {
        let install: Bool = lock.withLock {
            defer { atExitInstalled = true }
            return !atExitInstalled
        }
        if install {
            atexit { PortRegistry.shared.unlinkAllFiles() }
        }
    }

    private func unlinkAllFiles() {
        let ports = lock.withLock { local.values.compactMap(\.port) }
        for port in ports { port.receiver?.unlinkFilesAtExit() }
    }

    func addLocal(_ port: Port) {
        lock.withLock { local[port.address.portID] = WeakPort(port: port) }
    }

    func removeLocal(_ address: PortAddress) {
        lock.withLock {
            if let entry = local[address.portID], entry.port == nil || entry.port?.address == address {
                local[address.portID] = nil
            }
        }
    }

    func resolve(_ address: PortAddress) -> Port {
        if address.isInThisProcess {
            if let port = lock.withLock({ local[address.portID]?.port }) { return port }
            // Its port is gone: a send right that can only fail, clearly.
            return Port(sendRightTo: address, invalidBecause: .invalidPort("Port(\(address))"))
        }
        var evicted: Port?
        let (port, isNew): (Port, Bool) = lock.withLock {
            if let existing = remote[address]?.port { return (existing, false) }
            let made = Port(sendRightTo: address)
            remote[address] = WeakPort(port: made)
            if remote.count % 256 == 0 { remote = remote.filter { $0.value.port != nil } }
            evicted = recent[recentNext]
            recent[recentNext] = made
            recentNext = (recentNext + 1) % recent.count
            return (made, true)
        }
        _ = evicted  // released here, outside the lock
        if isNew { ProcessWatcher.shared.watch(ProcessIdentity(pid: address.pid, startTime: address.startTime)) }
        return port
    }

    /// The process has exited: every send right to its ports becomes invalid (S-PORT-5).
    func processExited(_ process: ProcessIdentity) {
        let ports: [Port] = lock.withLock {
            let matching = remote.filter { $0.key.pid == process.pid && $0.key.startTime == process.startTime }
            for key in matching.keys { remote[key] = nil }
            return matching.values.compactMap(\.port)
        }
        for port in ports {
            port.invalidate(because: .peerDied(pid: process.pid, port: port.description))
        }
    }
}
