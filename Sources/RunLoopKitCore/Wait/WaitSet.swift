internal import CLinuxSupport
import Glibc

/// An epoll set: the one blocking wait of a sleeping loop (S-RUN-9).
///
/// Each mode that holds port sources has its own set, like CFRunLoop's
/// per-mode port sets, so that running a mode listens to exactly that mode's
/// sources and switching modes costs no epoll_ctl. Every set also holds the
/// loop's wake-up eventfd and timerfd. Registration calls are thread-safe (the
/// kernel's), so sources may be added from any thread while the loop sleeps.
final class WaitSet: @unchecked Sendable {
    /// Tokens reserved for the loop's own fds; sources use tokens from 3 up.
    static let wakeUpToken: UInt64 = 0
    static let timerToken: UInt64 = 1
    /// The main queue's eventfd, in the main loop's common modes (S-EXEC-3).
    static let mainQueueToken: UInt64 = 2

    let fileDescriptor: Int32

    init() throws(RunLoopError) {
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw .lastSystemError("epoll_create1") }
        fileDescriptor = fd
    }

    deinit { close(fileDescriptor) }

    /// Adds `fd`, reporting readability with `token`. Edge-triggered for
    /// ZeroMQ's ZMQ_FD (its readiness is a signal to read ZMQ_EVENTS, not a
    /// level), level-triggered for everything else.
    func add(_ fd: Int32, token: UInt64, edgeTriggered: Bool) throws(RunLoopError) {
        var event = epoll_event()
        event.events = EPOLLIN.rawValue | (edgeTriggered ? EPOLLET.rawValue : 0)
        event.data.u64 = token
        guard epoll_ctl(fileDescriptor, EPOLL_CTL_ADD, fd, &event) == 0 else {
            throw .lastSystemError("epoll_ctl(ADD, fd \(fd))")
        }
    }

    /// Removes `fd`; an fd that is no longer there is not an error.
    func remove(_ fd: Int32) {
        var event = epoll_event()
        _ = epoll_ctl(fileDescriptor, EPOLL_CTL_DEL, fd, &event)
    }

    /// Waits for readiness: blocks when `block` is true, else only looks.
    /// Returns how many events were written to `events`.
    func wait(into events: UnsafeMutablePointer<epoll_event>, capacity: Int32, block: Bool) -> Int {
        let count = epoll_wait(fileDescriptor, events, capacity, block ? -1 : 0)
        return count < 0 ? 0 : Int(count)  // EINTR: the loop simply passes again
    }
}
