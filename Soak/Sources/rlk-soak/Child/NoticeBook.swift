import RunLoopKit
import Synchronization

/// How this process's send rights to other processes' ports learnt that
/// those processes died: per process, how many were held, how many were
/// seen invalid, and when the last was. The coordinator compares that with
/// when it sent SIGKILL.
final class NoticeBook: Sendable {
    private let records = Mutex([Int32: NoticeRecord]())

    /// One send right under watch. Holds no port, so that its port's
    /// invalidation handler, which holds it, makes no cycle.
    final class Watch: Sendable {
        fileprivate enum State: UInt8 { case held = 0, noticed = 1, released = 2 }
        fileprivate let pid: Int32
        fileprivate let state = Atomic<UInt8>(State.held.rawValue)
        fileprivate init(pid: Int32) { self.pid = pid }

        fileprivate func leave(_ from: State, for to: State) -> Bool {
            state.compareExchange(expected: from.rawValue, desired: to.rawValue, ordering: .relaxed).exchanged
        }
    }

    /// Starts watching `port`, a send right to another process's port.
    func watch(_ port: Port) -> Watch {
        let watch = Watch(pid: port.ownerProcessID)
        records.withLock { records in
            records[watch.pid, default: NoticeRecord(pid: watch.pid, held: 0, noticed: 0, latestNotice: 0, noticedBySend: 0)].held += 1
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
            guard var record = records[watch.pid] else { return }
            record.noticed += 1
            record.latestNotice = max(record.latestNotice, now)
            if bySend { record.noticedBySend += 1 }
            records[watch.pid] = record
        }
    }

    /// The send right is let go before any notice: it is no longer held.
    func release(_ watch: Watch) {
        guard watch.leave(.held, for: .released) else { return }
        records.withLock { $0[watch.pid]?.held -= 1 }
    }

    var all: [NoticeRecord] { records.withLock { Array($0.values) } }
}
