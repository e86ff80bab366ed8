import Synchronization

/// The coordinator's list of named ports, as the children announce them,
/// and of the incarnations it killed (whose ports leave the list at once).
final class DirectoryKeeper: Sendable {
    private let state = Mutex((entries: [UInt64: DirectoryEntry](), dead: Set<UInt32>()))

    func change(added: [DirectoryEntry], removed: [UInt64]) {
        state.withLock { state in
            for entry in added where !state.dead.contains(Identifiers.incarnation(of: entry.endpointID)) {
                state.entries[entry.endpointID] = entry
            }
            for id in removed { state.entries[id] = nil }
        }
    }

    func markDead(_ incarnation: UInt32) {
        state.withLock { state in
            state.dead.insert(incarnation)
            state.entries = state.entries.filter { Identifiers.incarnation(of: $0.key) != incarnation }
        }
    }

    var snapshot: Directory {
        state.withLock { Directory(entries: Array($0.entries.values), deadIncarnations: Array($0.dead)) }
    }
}
