internal import CLinuxSupport
import Glibc
import Logging
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// The death mark of a name whose holder died holding it (S-PORT-9;
/// docs/wire-format.md, "Name files"): the first process to find the holder
/// dead writes the time after the holder's descriptor, under the name's
/// lock. For `window` after that mark every lookup, in any process, answers
/// `.nameHolderDied`, and the sweep keeps the name's files; after it the
/// name reads as not found and the next sweep removes them. A registration
/// ends it at once (it rewrites the file).
///
/// The time is the wall clock's (CLOCK_REALTIME), the one clock every
/// process, and a reader in another language, reads alike and that a
/// runtime directory kept across a reboot still makes sense of.
enum DeadHolderMark {
    /// Ten minutes, or `RUNLOOPKIT_DEAD_HOLDER_WINDOW` seconds when the
    /// process starts (tests shorten it; a value that is not a number of
    /// seconds is logged and ignored).
    static let window: Int64 = {
        let tenMinutes: Int64 = 600 * 1_000_000_000
        guard let text = getenv("RUNLOOPKIT_DEAD_HOLDER_WINDOW").map({ String(cString: $0) }) else { return tenMinutes }
        guard let seconds = Double(text), seconds.isFinite, seconds >= 0, seconds < 1e9 else {
            Logger(label: "RunLoopKit.Port").warning(
                "RUNLOOPKIT_DEAD_HOLDER_WINDOW=\(text) is not a number of seconds; a dead holder's name is kept 600 s")
            return tenMinutes
        }
        return Int64(seconds * 1e9)
    }()

    static func now() -> Int64 { rlk_realtime_nanoseconds() }

    /// Whether a mark made at `diedAt` still stands. A mark further in the
    /// future than the window (the clock was set back) stands no longer.
    static func stands(_ diedAt: Int64, now: Int64 = now()) -> Bool {
        let age = now &- diedAt
        return age < window && age > -window
    }

    /// Judges a name nobody holds, with its lock file `fd` open for
    /// writing and locked exclusively by the caller (so that nobody
    /// registers meanwhile), and the path checked to name it. Returns the
    /// dead holder's pid while its mark stands, writing the mark first if
    /// this process is the first to find the holder dead; nil when the name
    /// is simply free (empty, released, not a name file, or marked longer
    /// ago than the window), whose files may go.
    static func judge(lockedFile fd: Int32) -> Int32? {
        guard let (file, count) = NameLock.readNameFile(fd),
              // A zombie has died too: its lock went with its files.
              !ProcessIdentity(pid: file.holder.pid, startTime: file.holder.startTime).isRunning else { return nil }
        if let diedAt = file.diedAt { return stands(diedAt) ? file.holder.pid : nil }
        // The first to find the holder dead: the mark goes after the
        // descriptor. Should the write fail, the next reader tries again.
        let mark = WireFormat.deathMark(diedAt: now())
        _ = pwrite(fd, mark, mark.count, off_t(count))
        return file.holder.pid
    }

    /// A lookup found the holder of the name whose lock file is `path`
    /// dead, and no mark: takes the name's lock to mark it. `.settling`
    /// when another process holds the lock (a registration, or another
    /// process marking or sweeping): the caller looks again.
    static func mark(_ path: String) -> NameLock.State {
        let fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { return .free(diedHolder: nil) }  // removed meanwhile
        defer { close(fd) }  // drops the lock
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else { return .settling(lockHolder: nil) }
        // A sweep may have removed this file between our open and our lock.
        guard let identity = FileIdentity(fd), FileIdentity(path: path) == identity else { return .settling(lockHolder: nil) }
        return .free(diedHolder: judge(lockedFile: fd))
    }
}
