internal import CLinuxSupport
import Glibc
import Logging
@_spi(RunLoopKitInternals) import RunLoopKitCore

/// Watches the processes that own the remote ports this process holds, and
/// invalidates those ports when their process exits (S-PORT-5).
///
/// Each process is watched through a pidfd (pidfd_open, Linux 5.3+) added as
/// a Source1 to the loop of one thread, `rlk-procwatch`: the kernel makes the
/// pidfd readable when the process exits, so its ports become invalid within
/// milliseconds. Where pidfds are not available, the watcher looks at every
/// watched process every `pollInterval` seconds instead. Either way the
/// bound is documented as one second (docs/ports.md).
final class ProcessWatcher: Sendable {
    static let shared = ProcessWatcher()
    static let pollInterval: TimeInterval = 0.25
    private static let logger = Logger(label: "RunLoopKit.ProcessWatcher")

    private struct Watches {
        var watched: Set<ProcessIdentity> = []
        /// Processes watched by polling, where pidfd_open failed.
        var polled: Set<ProcessIdentity> = []
        /// The watcher's thread, made on first use.
        var thread: LoopThread?
        var pollTimer: Timer?
    }

    private let watches = Locked(Watches())

    /// Starts watching `process`, once. Never calls back on the caller's
    /// thread: an exit, even one that already happened, is reported on the
    /// watcher's thread.
    func watch(_ process: ProcessIdentity) {
        guard let loop: RunLoop = watches.withLock({ watches in
            guard watches.watched.insert(process).inserted else { return nil }
            guard let loop = Self.watcherLoop(&watches) else {
                watches.watched.remove(process)  // a later watch tries again
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
        watches.withLock {
            $0.watched.remove(process)
            $0.polled.remove(process)
        }
        PortRegistry.shared.processExited(process)
    }

    private func startPolling(_ process: ProcessIdentity, on loop: RunLoop) {
        let needsTimer: Bool = watches.withLock {
            $0.polled.insert(process)
            return $0.pollTimer == nil
        }
        guard needsTimer, let timer = try? Timer(timeInterval: Self.pollInterval, repeats: true, block: { [self] _ in
            let candidates = watches.withLock { $0.polled }
            for process in candidates where !process.isAlive { exited(process) }
        }) else { return }
        watches.withLock { $0.pollTimer = timer }
        loop.add(timer, forMode: .common)
    }

    /// The watcher thread's loop, starting the thread on first use (lock held).
    private static func watcherLoop(_ watches: inout Watches) -> RunLoop? {
        if let loop = watches.thread?.runLoop { return loop }
        let made = LoopThread(name: "rlk-procwatch")
        do {
            try made.start()
        } catch {
            Self.logger.error("cannot start the process watcher: \(error); remote ports will not notice their process's exit")
            return nil
        }
        watches.thread = made
        return made.runLoop
    }
}
