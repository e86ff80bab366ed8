internal import CLinuxSupport
import Glibc
import Logging

/// Watches the processes that own the remote ports this process holds, and
/// invalidates those ports when their process exits (S-PORT-5).
///
/// Each process is watched through a pidfd (pidfd_open, Linux 5.3+) added as
/// a Source1 to the loop of one thread, `rlk-procwatch`: the kernel makes the
/// pidfd readable when the process exits, so its ports become invalid within
/// milliseconds. Where pidfds are not available, the watcher looks at every
/// watched process every `pollInterval` seconds instead. Either way the
/// bound is documented as one second (docs/ports.md).
final class ProcessWatcher: @unchecked Sendable {
    // @unchecked Sendable: `watched` is guarded by `lock`; the thread's loop
    // is used through its thread-safe API.
    static let shared = ProcessWatcher()
    static let pollInterval: TimeInterval = 0.25
    private static let logger = Logger(label: "RunLoopKit.ProcessWatcher")

    private let lock = Lock()
    // Guarded by lock.
    private var watched: Set<ProcessIdentity> = []
    // Guarded by lock: processes watched by polling, where pidfd_open failed.
    private var polled: Set<ProcessIdentity> = []
    // Guarded by lock: made on first use.
    private var thread: LoopThread?
    // Guarded by lock.
    private var pollTimer: Timer?

    /// Starts watching `process`, once. Never calls back on the caller's
    /// thread: an exit, even one that already happened, is reported on the
    /// watcher's thread.
    func watch(_ process: ProcessIdentity) {
        guard let loop: RunLoop = lock.withLock({
            guard watched.insert(process).inserted else { return nil }
            guard let loop = watcherLoopLocked() else {
                watched.remove(process)  // a later watch tries again
                return nil
            }
            return loop
        }) else { return }
        let fd = rlk_pidfd_open(process.pid)
        if fd < 0 {
            if errno == ESRCH {
                loop.perform { [self] in exited(process) }
            } else {
                startPolling(process, on: loop)
            }
            return
        }
        // The pid may have been reused before pidfd_open: the start time tells.
        guard process.isAlive else {
            close(fd)
            loop.perform { [self] in exited(process) }
            return
        }
        let source = SocketSource(fileDescriptor: fd) { [self] source, fd in
            source.invalidate()
            close(fd)
            exited(process)
        }
        do {
            try loop.add(source, forMode: .common)
        } catch {
            close(fd)
            startPolling(process, on: loop)
        }
    }

    private func exited(_ process: ProcessIdentity) {
        lock.withLock {
            watched.remove(process)
            polled.remove(process)
        }
        PortRegistry.shared.processExited(process)
    }

    private func startPolling(_ process: ProcessIdentity, on loop: RunLoop) {
        let needsTimer: Bool = lock.withLock {
            polled.insert(process)
            return pollTimer == nil
        }
        guard needsTimer, let timer = try? Timer(timeInterval: Self.pollInterval, repeats: true, block: { [self] _ in
            let candidates = lock.withLock { polled }
            for process in candidates where !process.isAlive { exited(process) }
        }) else { return }
        lock.withLock { pollTimer = timer }
        loop.add(timer, forMode: .common)
    }

    private func watcherLoopLocked() -> RunLoop? {
        if let loop = thread?.runLoop { return loop }
        let made = LoopThread(name: "rlk-procwatch")
        do {
            try made.start()
        } catch {
            Self.logger.error("cannot start the process watcher: \(error); remote ports will not notice their process's exit")
            return nil
        }
        thread = made
        return made.runLoop
    }
}
