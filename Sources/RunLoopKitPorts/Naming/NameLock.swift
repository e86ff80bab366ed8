import Glibc
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// A name's lock file, `<name>.lock`, and what it says about the name's
/// holder at one moment (S-PORT-9; docs/ports.md, "Names").
///
/// The holder keeps an exclusive `flock` on the file for as long as it
/// holds the name, and writes its port descriptor into it. The kernel
/// drops a dead process's flock but not what it wrote, and a new holder
/// takes the lock before it writes: so the bytes alone can name a previous
/// holder, or be half written. A reader therefore trusts a descriptor only
/// when the process it names is the one holding the lock right now, which
/// `/proc/locks` tells (it lists each flock with its holder's pid, device
/// and inode), and only when that process still has the descriptor's start
/// time (a reused pid has another). Anything else is a moment of change:
/// a registration writing, a sweep removing a stale file, a holder dying.
enum NameLock {
    /// What a look at a name's files found.
    enum State: Equatable {
        /// The live holder's published descriptor.
        case held(PortAddress)
        /// Locked, but the file does not (yet) name the lock's holder: a
        /// registration between its lock and its write, a sweep, or a
        /// holder dying. Settles within microseconds unless that process
        /// is stopped; `lockHolder` is the pid holding the lock, if known.
        case settling(lockHolder: Int32?)
        /// Nobody holds the name. `diedHolder`: the pid of the process the
        /// file still names, if that process has exited (it died or exited
        /// holding the name, never releasing it) and was first found dead
        /// less than `DeadHolderMark.window` ago.
        case free(diedHolder: Int32?)
    }

    /// How long a look waits for a name that is settling (a registration
    /// half done) before answering as if it were free: far above the
    /// microseconds a running registrant needs, far below any lookup
    /// timeout a user would choose.
    static let settleSeconds = 0.1

    /// How long a waiter keeps waiting for one name that is settling: for
    /// `settleSeconds`, and for at least `minimumLooks` looks. The looks
    /// count because the time alone does not: a waiter the scheduler kept
    /// off the CPU for 100 ms (a loaded machine, a sanitizer) would
    /// otherwise take the one look it makes after that for the last, and
    /// answer "in use" or "not found" for a lock a sweep held for
    /// microseconds. A registrant stopped between its lock and its write
    /// still ends the wait: after about `minimumLooks` × 200 µs of looks at
    /// least, `settleSeconds` at least.
    struct SettleWait {
        static let minimumLooks = 50
        private var since: UInt64?
        private var looks = 0

        /// Records a look that found the name settling, and says whether
        /// the waiter may look again (after a short sleep).
        mutating func mayLookAgain(now: UInt64) -> Bool {
            let since = self.since ?? now
            self.since = since
            looks += 1
            return looks < Self.minimumLooks || now < MonotonicClock.instant(seconds: NameLock.settleSeconds, after: since)
        }

        /// The name settled (it was seen free): a later settling is a new one.
        mutating func reset() {
            since = nil
            looks = 0
        }
    }

    /// Looks at the name whose lock file is `path` once.
    static func inspect(_ path: String) -> State {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return .free(diedHolder: nil) }
        defer { close(fd) }
        return inspect(fd, path: path)
    }

    /// Looks at an open lock file (not locked by the caller). The order is
    /// the protocol: who holds the lock, then what the file says, then
    /// whether the same process still holds it. A holder empties the file
    /// before it lets the lock go, so bytes read while one process held the
    /// lock throughout, and naming that very process, are its current
    /// descriptor.
    static func inspect(_ fd: Int32, path: String) -> State {
        if flock(fd, LOCK_SH | LOCK_NB) == 0 {
            // Read under the shared lock: a process writing a death mark
            // holds the lock exclusively, so the mark is never read half
            // written.
            let file = readNameFile(fd)?.file
            flock(fd, LOCK_UN)
            guard let file, !ProcessIdentity(pid: file.holder.pid, startTime: file.holder.startTime).isRunning else {
                return .free(diedHolder: nil)
            }
            guard let diedAt = file.diedAt else { return DeadHolderMark.mark(path) }
            return .free(diedHolder: DeadHolderMark.stands(diedAt) ? file.holder.pid : nil)
        }
        guard let identity = FileIdentity(fd), let holder = FileLocks.exclusiveHolder(of: identity) else {
            return .settling(lockHolder: nil)
        }
        // A live holder's file has no death mark: one still there is a
        // registration's between its write and its truncation.
        guard let file = readNameFile(fd)?.file, file.diedAt == nil,
              file.holder.pid == holder,
              ProcessIdentity.startTime(of: holder) == file.holder.startTime,
              FileLocks.exclusiveHolder(of: identity) == holder,
              FileIdentity(path: path) == identity else {
            return .settling(lockHolder: holder)
        }
        return .held(file.holder)
    }

    /// What a lock file holds, if it holds exactly one descriptor (and at
    /// most one death mark), and how many bytes that is.
    static func readNameFile(_ fd: Int32) -> (file: WireFormat.NameFile, count: Int)? {
        var buffer = [UInt8](repeating: 0, count: WireFormat.maxNameFileBytes + 1)
        let count = pread(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        let file = buffer.withUnsafeBytes { bytes in
            try? WireFormat.decodeNameFile(UnsafeRawBufferPointer(rebasing: bytes[..<count]))
        }
        return file.map { ($0, count) }
    }

    /// Opens and exclusively locks `path` for a registration, or says who
    /// holds it. Retries through the moments of change (a sweep that
    /// removes the file, a registrant that has not written yet) as long as
    /// a `SettleWait` allows.
    static func acquire(_ path: String) throws(AcquireError) -> Int32 {
        var settling = SettleWait()
        while true {
            let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600)
            guard fd >= 0 else { throw .systemCall(.last("open(\(path))")) }
            if flock(fd, LOCK_EX | LOCK_NB) == 0 {
                // A sweep may have removed this file between our open and
                // our lock: then the lock names nothing, and the name's
                // file is another (or none). Start again.
                if let identity = FileIdentity(fd), FileIdentity(path: path) == identity { return fd }
                close(fd)
                continue
            }
            let state = inspect(fd, path: path)
            close(fd)
            switch state {
            case let .held(holder):
                throw .held(by: holder.pid)
            case let .settling(lockHolder):
                guard settling.mayLookAgain(now: MonotonicClock.now()) else { throw .held(by: lockHolder ?? 0) }
                usleep(200)
            case .free:
                continue  // released between our lock and our look
            }
        }
    }

    enum AcquireError: Error {
        case held(by: Int32)
        case systemCall(SystemCallError)
    }

    /// Removes the files of a name nobody holds, `<name>.lock` and
    /// `<name>.port`, while holding the lock and only if `lockPath` still
    /// names the file locked (a registrant that opened the file before the
    /// removal then finds its lock naming nothing and starts again, see
    /// `acquire`). A name whose holder died is kept, and marked if it was
    /// not yet, until its mark is `DeadHolderMark.window` old: lookups say
    /// `.nameHolderDied` until then. Returns whether it removed them.
    @discardableResult
    static func removeIfStale(lockPath: String, socketPath: String) -> Bool {
        let fd = open(lockPath, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return false }
        guard let identity = FileIdentity(fd), FileIdentity(path: lockPath) == identity else { return false }
        guard DeadHolderMark.judge(lockedFile: fd) == nil else { return false }
        // The socket first: once the lock file is gone, a registrant can
        // make a new one and bind a new socket, which must stay.
        unlink(socketPath)
        unlink(lockPath)
        return true
    }
}
