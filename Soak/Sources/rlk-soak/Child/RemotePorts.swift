import RunLoopKit
import Synchronization

/// The ports of other processes: the coordinator's directory of names, the
/// send rights looked up from it (each watched by the notice book), and the
/// ports seen invalid while the directory still listed them.
final class RemotePorts: Sendable {
    /// A send right looked up by name.
    struct Right: Sendable {
        let port: Port
        let endpointID: UInt64
        let watch: NoticeBook.Watch
    }

    private struct State {
        var entries: [DirectoryEntry] = []
        var dead: Set<UInt32> = []
        var rights: [String: Right] = [:]
        /// Ports of live processes that a sender found invalid while the
        /// directory listed them: either their owner invalidated them and
        /// the directory has not caught up yet, or a false invalidation.
        var suspects: Set<UInt64> = []
    }

    let notices = NoticeBook()
    private let ownIncarnation: UInt32
    private let state = Mutex(State())

    init(ownIncarnation: UInt32) { self.ownIncarnation = ownIncarnation }

    /// Takes in the coordinator's directory. Send rights to ports no longer
    /// listed are let go, except those into killed processes, which are
    /// kept until they are seen invalid (that is what is checked of them).
    func update(_ directory: Directory) {
        let released: [Right] = state.withLock { state in
            state.entries = directory.entries.filter { Identifiers.incarnation(of: $0.endpointID) != ownIncarnation }
            state.dead.formUnion(directory.deadIncarnations)
            let listed = Set(state.entries.map(\.name))
            state.suspects.formIntersection(state.entries.map(\.endpointID))
            var released: [Right] = []
            for (name, right) in state.rights {
                let ownerDead = state.dead.contains(Identifiers.incarnation(of: right.endpointID))
                if !right.port.isValid || (!listed.contains(name) && !ownerDead) {
                    released.append(right)
                    state.rights[name] = nil
                }
            }
            return released
        }
        for right in released { notices.release(right.watch) }
    }

    /// A send right to a random named port of another live process, looked
    /// up by name the first time; nil if there is none or its name is gone.
    func random(using generator: inout SeededGenerator) -> Right? {
        let (entry, cached): (DirectoryEntry?, Right?) = state.withLock { state in
            let live = state.entries.filter { !state.dead.contains(Identifiers.incarnation(of: $0.endpointID)) }
            guard !live.isEmpty else { return (nil, nil) }
            let entry = live[Int(generator.next() % UInt64(live.count))]
            return (entry, state.rights[entry.name])
        }
        guard let entry else { return nil }
        if let cached, cached.port.isValid { return cached }
        guard let port = try? PortNameServer.lookup(entry.name) else { return nil }
        let right = Right(port: port, endpointID: entry.endpointID, watch: notices.watch(port, owner: Identifiers.incarnation(of: entry.endpointID)))
        let kept: Right = state.withLock { state in
            if let existing = state.rights[entry.name], existing.port.isValid { return existing }
            state.rights[entry.name] = right
            return right
        }
        if kept.watch !== right.watch { notices.release(right.watch) }
        return kept
    }

    /// A sender found the port invalid.
    func sawInvalid(_ endpointID: UInt64) {
        state.withLock { state in
            if state.entries.contains(where: { $0.endpointID == endpointID }) { state.suspects.insert(endpointID) }
        }
    }

    var suspects: [UInt64] { state.withLock { Array($0.suspects) } }

    /// Lets go of every send right (a checkpoint's quiet state holds none).
    func releaseAll() {
        let rights = state.withLock { state in
            defer { state.rights.removeAll() }
            return Array(state.rights.values)
        }
        for right in rights { notices.release(right.watch) }
    }
}
