internal import CLinuxSupport
internal import Dispatch
import Glibc

/// `DispatchQueue.main` as an input of the main thread's loop (S-EXEC-3),
/// as CFRunLoop serves it: while `RunLoop.main` runs a common mode on the
/// main thread, blocks queued on the main queue, and with them `@MainActor`
/// jobs, run there, one drain per pass.
///
/// libdispatch on Linux hands a run loop the main queue's eventfd, readable
/// while blocks wait, and a drain that runs them on the calling thread
/// (docs/design.md, "The main queue"). The eventfd sits in the wait set of
/// every common mode of the main loop (never in a mode outside them, so
/// their runs are not woken by main-queue work); whichever run epoll tells
/// of it reads it, so that, level-triggered as it is, it never makes a run
/// spin, and remembers that the queue has work. Only a run of a common mode
/// outside a drain drains: a run nested in a main-queue block or a
/// `@MainActor` job neither drains again nor counts the queue as a source,
/// as CFRunLoop does not.
///
/// Threading: the main thread's alone (the loop's own thread); the eventfd
/// number is also kept in the loop's state, under its lock, for
/// `addCommonMode` from any thread.
final class MainQueue: @unchecked Sendable {
    // @unchecked Sendable: every field is read and written on the main
    // thread only (the main loop's runs).

    private enum Handle {
        /// RunLoop.main has not run on the main thread yet.
        case untaken
        /// The main queue's eventfd.
        case taken(Int32)
        /// libdispatch gave no handle: the main thread is parked in
        /// `dispatch_main()` (an async main, or a test runner), which
        /// drains the queue itself. (A mode whose wait set refuses the
        /// eventfd is logged and runs without it; the others keep it.)
        case unavailable
    }

    private var handle = Handle.untaken
    /// Whether epoll told of the eventfd since the last drain.
    private var hasWork = false
    /// True while a drain runs: runs nested in it neither drain nor count the queue.
    private(set) var isDraining = false

    /// Takes the main queue's handle on the first run of the main loop on
    /// the main thread. Returns its eventfd to register, or nil if it was
    /// taken before or is unavailable.
    func takeHandleOnFirstRun() -> Int32? {
        guard case .untaken = handle else { return nil }
        let descriptor = _dispatch_get_main_queue_handle_4CF()
        guard descriptor >= 0 else {
            handle = .unavailable
            return nil
        }
        handle = .taken(descriptor)
        return descriptor
    }

    /// Whether the queue keeps the running common mode from being empty
    /// (S-RUN-1): taken, and not in a run nested in a drain.
    var keepsCommonModesRunning: Bool {
        guard case .taken = handle else { return false }
        return !isDraining
    }

    /// Whether a run of a common mode should drain now (and not sleep).
    var isDue: Bool { hasWork && !isDraining }

    /// Epoll told of the eventfd: read it (it stays readable until read,
    /// and a run that cannot drain would otherwise wake again at once) and
    /// remember the work for the next run that may drain.
    func eventfdWasReady() {
        guard case let .taken(descriptor) = handle else { return }
        var count: UInt64 = 0
        // Non-blocking (libdispatch makes it so): EAGAIN if another run read it first.
        if read(descriptor, &count, MemoryLayout<UInt64>.size) == MemoryLayout<UInt64>.size { hasWork = true }
    }

    /// Runs the blocks waiting on the main queue (the main loop's step 9).
    func drain() {
        hasWork = false
        isDraining = true
        defer { isDraining = false }
        _dispatch_main_queue_callback_4CF(nil)
    }
}
