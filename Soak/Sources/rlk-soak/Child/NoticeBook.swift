import RunLoopKit
import Synchronization

/// How this process's send rights to other processes' ports learnt that
/// those processes died: per process, how many were held, how many were
/// seen invalid, and when the last was. The coordinator compares that with
/// when it sent SIGKILL. Kept per child incarnation, not per pid: over a
/// long run pids come round again (a 30-minute soak wrapped them), and a
/// later child with a killed one's pid must not lend its notices to it.
final class NoticeBook: Sendable {
    private let records = Mutex([UInt32: NoticeRecord]())

    /// One send right under watch. Holds no port, so that its port's
    /// invalidation handler, which holds it, makes no cycle.
    final class Watch: Sendable {
        fileprivate enum State: UInt8 { case held = 0, noticed = 1, released = 2 }
        fileprivate let pid: Int32
        fileprivate let owner: UInt32
        fileprivate let state = Atomic<UInt8>(State.held.rawValue)
        fileprivate init(pid: Int32, owner: UInt32) {
            self.pid = pid
            self.owner = owner
        }

        fileprivate func leave(_ from: State, for to: State) -> Bool {
            state.compareExchange(expected: from.rawValue, desired: to.rawValue, ordering: .relaxed).exchanged
        }
    }

    /// Starts watching `port`, a send right to a port of child `owner`.
    func watch(_ port: Port, owner: UInt32) -> Watch {
        let watch = Watch(pid: port.ownerProcessID, owner: owner)
        records.withLock { records in
            records[watch.owner, default: NoticeRecord(incarnation: owner, pid: watch.pid, held: 0, noticed: 0, latestNotice: 0, noticedBySend: 0)].held += 1
        }
        port.addInvalidationHandler { [self] _ in notice(watch, bySend: false) }
        return watch
    }

    /// The send right is invalid: its handler ran, or a send to it failed
    /// with `.peerDied`. The first of the two counts.
    func notice(_ watch: Watch, bySend: Bool) {
        let now = MonotonicTime.now()
        guard watch.leave(.held, for: .noticed) else { return }
        records.withLock { records in
            guard var record = records[watch.owner] else { return }
            record.noticed += 1
            record.latestNotice = max(record.latestNotice, now)
            if bySend { record.noticedBySend += 1 }
            records[watch.owner] = record
        }
    }

    /// The send right is let go before any notice: it is no longer held.
    func release(_ watch: Watch) {
        guard watch.leave(.held, for: .released) else { return }
        records.withLock { $0[watch.owner]?.held -= 1 }
    }

    var all: [NoticeRecord] { records.withLock { Array($0.values) } }
}
