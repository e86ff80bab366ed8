import Glibc
import Synchronization
internal import CLinuxSupport
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The names the tap's records refer to by number: ports (by a tap id of
/// their own), threads (by kernel tid), reasons (of failed sends and
/// drops) and the process. A record carries numbers only, so that an
/// event costs its sender no String and no port lock; each name is
/// announced once, here, when it is first needed (or changed), and
/// travels to every reader ahead of the first record that needs it
/// (docs/tap-format.md, "Names").
///
/// Announcing takes this table's lock and, for a port, the port's lock,
/// once per port and name; events after that read two atomics.
final class TapNames: @unchecked Sendable {
    // @unchecked Sendable: everything that changes is behind `state`.
    static let shared = TapNames()

    /// What a name names; the kinds' numbers are the wire format's.
    enum Kind: UInt8 {
        case port = 1
        case thread = 2
        case reason = 3
        case process = 4
        /// The remote peer of a port reached over tcp (tap format 2): its
        /// endpoint and its process's instance.
        case remotePeer = 5
    }

    private struct State {
        /// Every name announced, encoded as the wire format carries them,
        /// one after another; `ends[i]` is where the i-th ends.
        var encoded: [UInt8] = []
        var ends: [Int] = []
        var nextPortID: UInt32 = 1
        var reasons: [String: UInt16] = [:]
    }

    private let state = Locked(State())

    /// The encoded names from the `from`-th on, and how many names there are.
    func encoded(from first: Int) -> (bytes: ArraySlice<UInt8>, count: Int) {
        state.withLock { state in
            let start = first == 0 ? 0 : state.ends[first - 1]
            return (state.encoded[start...], state.ends.count)
        }
    }

    /// The port's tap id, its name announced if it was not yet, or has
    /// changed since. Any thread.
    @inline(__always)
    func id(of port: Port) -> UInt32 {
        let identity = port.tapIdentity.load(ordering: .acquiring)
        if UInt32(truncatingIfNeeded: identity >> 32) == port.tapNameGeneration.load(ordering: .acquiring) {
            return UInt32(truncatingIfNeeded: identity)
        }
        return announce(port)
    }

    /// Gives the port a tap id if it has none and announces its current
    /// name. The generation is read before the name: a name that changes
    /// meanwhile bumps it again, and the next event announces once more.
    private func announce(_ port: Port) -> UInt32 {
        let generation = port.tapNameGeneration.load(ordering: .acquiring)
        let label = port.tapLabel
        let peer = port.tapRemotePeer
        return state.withLock { state in
            var id = UInt32(truncatingIfNeeded: port.tapIdentity.load(ordering: .acquiring))
            if id == 0 {
                id = state.nextPortID
                state.nextPortID &+= 1
            }
            Self.append(.port, id: id, name: label, to: &state)
            if let peer { Self.append(.remotePeer, id: id, name: peer, to: &state) }
            // Stored once the name is in the table, so that no record can
            // name the id before it.
            port.tapIdentity.store(UInt64(generation) << 32 | UInt64(id), ordering: .releasing)
            return id
        }
    }

    /// The calling thread's tid, its name announced the first time.
    @inline(__always)
    func currentThread() -> Int32 {
        let tid = rlk_tap_thread_id()
        if rlk_tap_thread_is_new() != 0 {
            let name = Self.threadName(ThreadIdentity.cachedName, tid: tid)
            state.withLock { Self.append(.thread, id: UInt32(bitPattern: tid), name: name, to: &$0) }
        }
        return tid
    }

    /// A reason's number (a failed send's error case, a drop's reason).
    func reasonID(_ reason: String) -> UInt16 {
        state.withLock { state in
            if let id = state.reasons[reason] { return id }
            let id = UInt16(truncatingIfNeeded: state.reasons.count + 1)
            state.reasons[reason] = id
            Self.append(.reason, id: UInt32(id), name: reason, to: &state)
            return id
        }
    }

    /// The process's name, announced when the tap starts.
    func announceProcess(_ name: String, pid: Int32) {
        state.withLock { Self.append(.process, id: UInt32(bitPattern: pid), name: name, to: &$0) }
    }

    /// One name, as the wire format carries it: kind (1 byte), 0 (1 byte),
    /// the name's length in bytes (2, little-endian), its id (4), the name
    /// (UTF-8, at most `maxNameBytes`).
    private static func append(_ kind: Kind, id: UInt32, name: String, to state: inout State) {
        let bytes = Array(name.utf8.prefix(TapWireFormat.maxNameBytes))
        state.encoded.append(kind.rawValue)
        state.encoded.append(0)
        TapWireFormat.appendLittleEndian(UInt16(bytes.count), to: &state.encoded)
        TapWireFormat.appendLittleEndian(id, to: &state.encoded)
        state.encoded += bytes
        state.ends.append(state.encoded.count)
    }

    // MARK: - Thread names

    /// This process's name: the basename of its argv[0].
    static let processName = TapCountFile.processName()

    /// The kernel's name of this process, which its main thread bears.
    static let kernelProcessName = TapCountFile.kernelName()

    /// How the tap names a thread: its loop's name, or its OS-level name,
    /// except for the threads whose OS-level names say little: libdispatch's
    /// workers (whose names Linux cuts to the last 15 bytes of a global
    /// queue's label, as `oot.default-qos`) are `dispatch-<qos>`, and the
    /// main thread without a loop name is `main`.
    static func threadName(_ name: String, tid: Int32) -> String {
        if let dispatch = dispatchWorkerName(name) { return dispatch }
        if tid == getpid(), name == kernelProcessName { return "main" }
        return name
    }

    /// libdispatch's global queues, by quality of service.
    private static let qualities = ["maintenance", "background", "utility", "default", "user-initiated", "user-interactive"]

    /// `dispatch-<qos>` (`dispatch-<qos>-overcommit`) for a name that is a
    /// global queue's label or its tail as Linux keeps it; nil otherwise.
    static func dispatchWorkerName(_ name: String) -> String? {
        guard name.count >= 8 else { return nil }
        for quality in qualities {
            let label = "com.apple.root.\(quality)-qos"
            if label.hasSuffix(name) { return "dispatch-\(quality)" }
        }
        // The overcommit queues' labels share their last 15 bytes
        // ("-qos.overcommit"): the queue running now tells which.
        guard "com.apple.root.default-qos.overcommit".hasSuffix(name) else { return nil }
        let current = String(cString: rlk_current_queue_label())
        for quality in qualities where current == "com.apple.root.\(quality)-qos.overcommit" {
            return "dispatch-\(quality)-overcommit"
        }
        return "dispatch-overcommit"
    }
}

extension Port {
    /// How the tap and portsniff name the port: its known name, else
    /// "<pid>/<port id>".
    var tapLabel: String { knownName ?? "\(address.pid)/\(address.portID)" }

    /// For a send right to a tcp port of another process, its peer as the
    /// tap names it: the endpoint (or that it only connects) and the
    /// instance; nil otherwise.
    var tapRemotePeer: String? {
        guard let endpoint = address.tcpEndpoint, !address.isInThisProcess else { return nil }
        return "\(endpoint.listener ?? "connecting only") instance \(endpoint.instance)"
    }
}
