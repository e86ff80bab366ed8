/// The ports this process knows, so that a descriptor always resolves to
/// the same object: a local port comes back as itself (S-PORT-3), and every
/// send right to one remote port shares one Port, one channel and one watch
/// on its process.
import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

final class PortRegistry: Sendable {
    static let shared = PortRegistry()

    /// Whether a newly resolved remote port's owner is watched for exit
    /// (S-PORT-5): always, but in the fuzzer's registries (`WireFuzzing`),
    /// which resolve made-up owners by the million.
    private let watchesOwners: Bool

    init(watchesOwners: Bool = true) {
        self.watchesOwners = watchesOwners
    }

    private struct WeakPort {
        weak var port: Port?
    }

    private struct Tables {
        /// Local ports by port id.
        var local: [UInt64: WeakPort] = [:]
        /// Send rights to other processes' ports.
        var remote: [PortAddress: WeakPort] = [:]
        /// The most recently resolved send rights, kept alive so that a reply
        /// port dropped after each reply does not close and reopen its ipc
        /// connection every time.
        var recent: [Port?] = Array(repeating: nil, count: 64)
        var recentNext = 0
        var atExitInstalled = false
    }

    private let tables = Locked(Tables())

    /// Makes sure that at process exit every local port still open has its
    /// ipc socket files removed and its drops not yet logged logged.
    func cleanUpAtExit() {
        let install: Bool = tables.withLock { tables in
            defer { tables.atExitInstalled = true }
            return !tables.atExitInstalled
        }
        if install {
            atexit { PortRegistry.shared.unlinkAllFiles() }
        }
    }

    private func unlinkAllFiles() {
        let ports = tables.withLock { $0.local.values.compactMap(\.port) }
        for port in ports {
            port.receiver?.unlinkFilesAtExit()
            port.receiver?.drops.flush()  // drops not yet in a log line
        }
    }

    func addLocal(_ port: Port) {
        tables.withLock { $0.local[port.address.portID] = WeakPort(port: port) }
    }

    func removeLocal(_ address: PortAddress) {
        tables.withLock { tables in
            if let entry = tables.local[address.portID], entry.port == nil || entry.port?.address == address {
                tables.local[address.portID] = nil
            }
        }
    }

    /// The send right to `address`: the local port, or the one send right
    /// shared by every holder of that remote port (the same identity at the
    /// same ipc path: a descriptor that claims a known port's identity with
    /// another path gets a send right of its own, and changes nothing for
    /// the holders of the first). A new remote port's owner is watched for
    /// exit, in a registry that watches owners.
    func resolve(_ address: PortAddress) -> Port {
        if address.isInThisProcess {
            if let port = tables.withLock({ $0.local[address.portID]?.port }) { return port }
            // Its port is gone: a send right that can only fail, clearly.
            return Port(sendRightTo: address, invalidBecause: .invalidPort("Port(\(address))"))
        }
        var evicted: Port?
        let (port, isNew): (Port, Bool) = tables.withLock { tables in
            // An invalid one is not handed out again: a descriptor that arrives
            // later (a peer that lied before, a process's port looked up
            // anew) gets a fresh send right and a fresh decision (S-PORT-8).
            if let existing = tables.remote[address]?.port, existing.isValid { return (existing, false) }
            let made = Port(sendRightTo: address)
            tables.remote[address] = WeakPort(port: made)
            if tables.remote.count % 256 == 0 { tables.remote = tables.remote.filter { $0.value.port != nil } }
            evicted = tables.recent[tables.recentNext]
            tables.recent[tables.recentNext] = made
            tables.recentNext = (tables.recentNext + 1) % tables.recent.count
            return (made, true)
        }
        _ = evicted  // released here, outside the lock
        if isNew && watchesOwners { address.route.watchOwner(of: address) }
        return port
    }

    /// The local port with `portID`, if it is alive: where the network
    /// thread forwards a tcp message.
    func localPort(_ portID: UInt64) -> Port? {
        tables.withLock { $0.local[portID]?.port }
    }

    /// A tcp connection to `instance` broke: every send right to its ports
    /// becomes invalid (S-NET-3), for the reason `error` gives.
    func connectionLost(to instance: ProcessInstance, error: (Port) -> PortError) {
        let ports: [Port] = tables.withLock { tables in
            let matching = tables.remote.filter { $0.key.tcpEndpoint?.instance == instance }
            for key in matching.keys { tables.remote[key] = nil }
            return matching.values.compactMap(\.port)
        }
        for port in ports {
            port.invalidate(because: error(port))
        }
    }

    /// The process has exited: every send right to its ports becomes invalid (S-PORT-5).
    func processExited(_ process: ProcessIdentity) {
        let ports: [Port] = tables.withLock { tables in
            let matching = tables.remote.filter { $0.key.process == process }
            for key in matching.keys { tables.remote[key] = nil }
            return matching.values.compactMap(\.port)
        }
        for port in ports {
            port.invalidate(because: .peerDied(pid: process.pid, port: port.description))
        }
    }
}
